"""Which models a failed check keeps from running: everything downstream of the table, nothing else."""

import pytest

from offsets_platform.lake import Lake
from offsets_platform.models import ModelRunner

pytestmark = pytest.mark.fast  # make test-fast


def test_a_blocked_table_stops_every_model_downstream_of_it_and_no_other(tmp_path):
    messages = []
    runner = ModelRunner(spark=None, lake=Lake(tmp_path / "lake"), emit=messages.append)
    waiting = {"b": {"a"}, "c": {"b", "x"}, "d": {"c"}, "e": {"x"}, "f": set()}
    blocked = list(runner._block_downstream("a", waiting))
    assert [(run.model, run.mode, run.rows_written) for run in blocked] == [
        ("b", "blocked", 0), ("c", "blocked", 0), ("d", "blocked", 0)]
    assert waiting == {"e": {"x"}, "f": set()}
    assert all("a failed an error-severity check" in message for message in messages)
