"""The session's small demo (see fixtures.py), for the report tests."""

from tests.report.fixtures import cleaned_demo, demo_lake, demo_run  # noqa: F401  (fixtures)
