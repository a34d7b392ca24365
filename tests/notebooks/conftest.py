"""The session's small demo (tests/report/fixtures.py), for the notebook tests: the notebooks
read its lake through OFFSETS_PLATFORM_HOME, so they do not run a demo of their own."""

from tests.report.fixtures import demo_lake, demo_run  # noqa: F401  (fixtures)
