"""What the fault trials count as the same answer in two lakes (proving_ground.lake_checks)."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pytest

from proving_ground.lake_checks import comparable_rows

pytestmark = pytest.mark.fast

MINUTE = datetime(2026, 11, 27, 10, 0, tzinfo=timezone.utc)


def counts(rows: list[tuple[int, int, int]]) -> pa.Table:
    """offset_commit_counts rows: (source_partition, first_source_offset, count_offset_commits),
    all in one minute."""
    return pa.table({"source_partition": [r[0] for r in rows], "first_source_offset": [r[1] for r in rows],
                     "minute_start_at": [MINUTE] * len(rows), "count_offset_commits": [r[2] for r in rows]})


def test_a_minute_two_runs_counted_equals_the_one_row_of_a_full_refresh():
    two_runs = counts([(3, 100, 4), (3, 104, 2)])
    assert comparable_rows("offset_commit_counts", two_runs) == comparable_rows("offset_commit_counts",
                                                                                counts([(3, 100, 6)]))
    assert comparable_rows("offset_commit_counts", two_runs) != comparable_rows("offset_commit_counts",
                                                                                counts([(3, 100, 5)]))
    # another partition's count is another row
    assert comparable_rows("offset_commit_counts", two_runs) != comparable_rows("offset_commit_counts",
                                                                                counts([(3, 100, 4), (4, 104, 2)]))


def test_other_tables_compare_row_by_row():
    assert comparable_rows("consumer_lag", counts([(3, 100, 4), (3, 104, 2)])) \
        != comparable_rows("consumer_lag", counts([(3, 100, 6)]))
