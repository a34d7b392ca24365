"""The runner pins the tables that mark writes complete before the tables they mark."""

from __future__ import annotations

import pytest

from offsets_platform.ingest.offsets_topic import CHECKPOINTS
from offsets_platform.ingest.snapshots import COMPLETION_TABLE
from offsets_platform.models.runner import COMPLETION_MARKERS, _in_pin_order

pytestmark = pytest.mark.fast  # make test-fast


def test_the_completion_markers_are_the_tables_ingest_writes_last():
    assert set(COMPLETION_MARKERS) == {COMPLETION_TABLE, CHECKPOINTS}


def test_completion_markers_are_pinned_first():
    tables = ["log_offset_snapshots", CHECKPOINTS, "offset_commit_records", COMPLETION_TABLE, "topic_configs"]
    assert _in_pin_order(tables)[:2] == sorted([COMPLETION_TABLE, CHECKPOINTS])
    assert sorted(_in_pin_order(tables)) == sorted(tables)
