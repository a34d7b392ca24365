"""Durations as a person reads them (offsets_platform.durations)."""

from __future__ import annotations

import pytest

from offsets_platform.durations import age_text, time_left_text

pytestmark = pytest.mark.fast


def test_ages_in_their_two_largest_units():
    assert [age_text(s) for s in (0, 59, 61, 3725, 86_405, 200_000)] == ["0s", "59s", "1m 1s", "1h 2m", "1d 0h",
                                                                         "2d 7h"]


def test_time_left_is_due_now_once_due():
    assert [time_left_text(h) for h in (-48, 0, 0.5, 12, 30.25)] == ["due now", "due now", "30m 0s", "12h 0m",
                                                                     "1d 6h"]
