"""The differential suites, as users write differential tests: parametrized pytest tests over
the proofdiff profile and workload fixtures that assert on oracle records. Run them with
``pytest suites`` (or ``pytest --pyargs suites``); ``proofdiff run`` evaluates the same oracles
through the same core without pytest."""
