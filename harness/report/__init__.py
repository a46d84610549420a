"""Evidence on disk, all read from one DifferentialResult: summary.json, index.html, junit.xml,
allure-results, pytest-benchmark JSON, and the console table."""
