"""Root conftest. The proofdiff plugin itself is registered by its ``pytest11`` entry point
(pyproject.toml), so it works from any repository; nothing needs registering here."""
