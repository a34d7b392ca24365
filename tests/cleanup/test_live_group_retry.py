"""`live_group` asks again while the coordinator is loading or has moved, as Kafka's admin client
does, and gives up on every other error at once (the answers are stood in for: a broker that is
loading its offsets partition answers so only for a moment after it starts)."""

from __future__ import annotations

import pytest

from offsets_platform.kafka import group_calls
from offsets_platform.kafka.group_calls import GroupCallError, live_group

pytestmark = pytest.mark.fast


def answers(monkeypatch, *errors: str):
    """`_live_group_once` raises these errors in turn, then answers "ok"; returns the calls made."""
    calls = []

    def once(admin, group):
        calls.append(group)
        if len(calls) <= len(errors):
            raise GroupCallError(group, errors[len(calls) - 1], "stand-in")
        return "ok"

    monkeypatch.setattr(group_calls, "_live_group_once", once)
    monkeypatch.setattr(group_calls.time, "sleep", lambda seconds: None)
    return calls


def test_a_loading_or_moved_coordinator_is_asked_again(monkeypatch):
    calls = answers(monkeypatch, "COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE")
    assert live_group(None, "g") == "ok" and len(calls) == 4


def test_any_other_error_is_raised_at_once(monkeypatch):
    calls = answers(monkeypatch, "GROUP_AUTHORIZATION_FAILED")
    with pytest.raises(GroupCallError, match="GROUP_AUTHORIZATION_FAILED"):
        live_group(None, "g")
    assert len(calls) == 1


def test_a_coordinator_still_loading_after_the_wait_is_raised(monkeypatch):
    answers(monkeypatch, *["COORDINATOR_LOAD_IN_PROGRESS"] * 100)
    with pytest.raises(GroupCallError, match="COORDINATOR_LOAD_IN_PROGRESS"):
        live_group(None, "g", retry_for_s=0)
