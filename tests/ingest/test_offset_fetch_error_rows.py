"""Every OffsetFetch of a snapshot that did not return the group's offsets leaves one error row
(scope 'group', the group id, operation 'OffsetFetch'): the models count a group's offsets as
removed only when its latest snapshot fetched them without one. The answers here are stood in
for: Apache Kafka names every group it was asked about (a real failure, a coordinator that
moved, is in test_coordinator_moves)."""

from __future__ import annotations

import pytest

from offsets_platform.ingest import snapshot_groups
from offsets_platform.ingest.snapshot_rows import SnapshotRows

pytestmark = pytest.mark.fast


class AnswersWithout:
    """An admin client whose OffsetFetch answer names no group."""

    def list_group_offsets(self, group_specs):
        return {}


def test_an_answer_that_leaves_the_group_out_is_an_offset_fetch_error_row():
    rows = SnapshotRows()
    snapshot_groups._add_committed_offsets(AnswersWithout(), rows, "g")
    assert rows.tables["committed_offset_snapshots"] == []
    assert [(e["scope"], e["name"], e["operation"], e["error"]) for e in rows.tables["snapshot_errors"]] == [
        ("group", "g", "OffsetFetch", "MISSING_FROM_RESPONSE")]
