"""How iter_runs schedules models: what a failed check keeps from running (everything downstream of
the table, nothing else), and when the models a run frees start."""

import threading
from contextlib import nullcontext

import pytest

from offsets_platform.lake import Lake
from offsets_platform.models import ModelRun, ModelRunner, default_project

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


def test_the_models_a_run_frees_start_before_the_caller_gets_the_run(tmp_path, monkeypatch):
    """Dagster stores a run's events when iter_runs yields it; the models waiting for that run
    must be running by then, not wait for the events. The caller here waits for them while it
    holds each run: the code that started them only after the caller came back never would."""
    models = {model.name: model for model in default_project().models}
    runner = ModelRunner(spark=None, lake=Lake(tmp_path / "lake"), emit=lambda line: None, workers=len(models))
    started: set[str] = set()
    changed = threading.Condition()

    def run_reported(name, *args) -> ModelRun:
        with changed:
            started.add(name)
            changed.notify_all()
        return ModelRun(model=name, mode="full", rows_written=0, rows_in_table=0, seconds=0.0)

    monkeypatch.setattr(runner, "_settings_for", lambda models: nullcontext())
    monkeypatch.setattr(runner, "_run_reported", run_reported)
    yielded: set[str] = set()
    for run in runner.iter_runs():
        yielded.add(run.model)
        freed = {name for name, model in models.items() if run.model in model.refs and set(model.refs) <= yielded}
        with changed:
            assert changed.wait_for(lambda freed=freed: freed <= started, timeout=10), \
                f"{sorted(freed - started)} had not started when {run.model} was handed over"
    assert started == set(models)
