"""Root conftest: registers the proofdiff pytest plugin (fixtures/plugin.py) for every test dir.

The plugin is inert unless a test asks for a ``proofdiff_*`` fixture, so the harness's own unit
tests (tests/) run without Docker.
"""

pytest_plugins = ["fixtures.plugin"]
