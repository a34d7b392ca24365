"""The rules of an offset reset's new offsets, as Kafka 4.3's OffsetsUtils applies them (pure)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from offsets_platform.kafka.group_calls import LiveGroupState
from offsets_platform.cleanup.plans import PlanError
from offsets_platform.cleanup.reset_plans import check_resettable, current_offsets
from offsets_platform.cleanup.reset_targets import (
    BY_DURATION, CLAMPED_TO_LOG_END, CLAMPED_TO_LOG_START, FROM_FILE, SHIFT_BY, TO_CURRENT, TO_DATETIME, TO_EARLIEST,
    TO_LATEST, TO_OFFSET, PartitionFacts, ResetSpec, ResetSpecError, export_csv, parse_datetime_ms, parse_duration,
    parse_reset_file, target_of,
)

pytestmark = pytest.mark.fast

# a partition whose log holds offsets 10 to 49 (retention deleted 0-9), the group at 30
FACTS = PartitionFacts(log_start=10, log_end=50, current=30, at_time=42)
NEVER_COMMITTED = PartitionFacts(log_start=10, log_end=50, current=None, at_time=None)


@pytest.mark.parametrize(("spec", "target", "requested", "clamped"), [
    (ResetSpec(TO_EARLIEST), 10, 10, None),
    (ResetSpec(TO_LATEST), 50, 50, None),
    (ResetSpec(TO_CURRENT), 30, 30, None),
    (ResetSpec(TO_OFFSET, 20), 20, 20, None),
    (ResetSpec(TO_OFFSET, 3), 10, 3, CLAMPED_TO_LOG_START),
    (ResetSpec(TO_OFFSET, 99), 50, 99, CLAMPED_TO_LOG_END),
    (ResetSpec(TO_OFFSET, 50), 50, 50, None),  # the log end itself is in range
    (ResetSpec(SHIFT_BY, -5), 25, 25, None),
    (ResetSpec(SHIFT_BY, -25), 10, 5, CLAMPED_TO_LOG_START),
    (ResetSpec(SHIFT_BY, 100), 50, 130, CLAMPED_TO_LOG_END),
    (ResetSpec(TO_DATETIME, 1), 42, 42, None),  # ListOffsets' answer, never clamped
    (ResetSpec(BY_DURATION, 1), 42, 42, None),
])
def test_each_specifier_resolves_as_kafkas_tool(spec, target, requested, clamped):
    found = target_of(spec, FACTS)
    assert (found.target, found.requested, found.clamped_to) == (target, requested, clamped)


def test_the_log_end_is_checked_before_the_log_start():
    # checkOffsetsRange: above the log end wins, even where the log end is below the log start
    odd = PartitionFacts(log_start=20, log_end=15, current=None)
    assert target_of(ResetSpec(TO_OFFSET, 18), odd).target == 15


def test_a_file_offset_is_clamped_like_to_offset():
    assert target_of(ResetSpec(FROM_FILE), FACTS, 5).target == 10
    assert target_of(ResetSpec(FROM_FILE), FACTS, 33).target == 33


def test_without_a_committed_offset():
    # to-current falls back to the log end; a time no record reaches, to the log end too
    assert target_of(ResetSpec(TO_CURRENT), NEVER_COMMITTED).target == 50
    assert target_of(ResetSpec(TO_DATETIME, 1), NEVER_COMMITTED).target == 50
    with pytest.raises(ResetSpecError, match="without a committed offset"):
        target_of(ResetSpec(SHIFT_BY, 1), NEVER_COMMITTED)
    found = target_of(ResetSpec(TO_EARLIEST), NEVER_COMMITTED)
    assert found.messages_read_again(NEVER_COMMITTED) is None and found.messages_skipped(NEVER_COMMITTED) is None


def test_what_a_reset_costs_the_group():
    earlier, later = target_of(ResetSpec(TO_EARLIEST), FACTS), target_of(ResetSpec(TO_LATEST), FACTS)
    assert (earlier.messages_read_again(FACTS), earlier.messages_skipped(FACTS)) == (20, 0)
    assert (later.messages_read_again(FACTS), later.messages_skipped(FACTS)) == (0, 20)
    # a group below the log start skips only what is still there: retention took the rest
    behind = PartitionFacts(log_start=10, log_end=50, current=4)
    assert target_of(ResetSpec(TO_LATEST), behind).messages_skipped(behind) == 40
    # committed past the log end: nothing there to read again beyond the log end
    ahead = PartitionFacts(log_start=10, log_end=50, current=60)
    assert target_of(ResetSpec(TO_OFFSET, 45), ahead).messages_read_again(ahead) == 5


@pytest.mark.parametrize(("text", "ms"), [
    ("2026-12-07T10:00:00.000", 1796637600000),
    ("2026-12-07T10:00:00.000Z", 1796637600000),
    ("2026-12-07T11:30:00.250+01:30", 1796637600250),
    ("2026-12-07T08:00:00.000-02", 1796637600000),
    ("2026-12-07T12:00:00.000+0200", 1796637600000),
])
def test_datetimes_read_as_kafkas_utils_get_date_time(text, ms):
    assert parse_datetime_ms(text) == ms


@pytest.mark.parametrize("text", ["2026-12-07", "2026-12-07T10:00:00", "2026-13-07T10:00:00.000",
                                  "1969-12-31T23:59:59.999Z"])
def test_datetimes_kafka_refuses_are_refused(text):
    with pytest.raises(ResetSpecError):
        parse_datetime_ms(text)


@pytest.mark.parametrize(("text", "duration"), [
    ("PT30M", timedelta(minutes=30)),
    ("P1DT2H", timedelta(days=1, hours=2)),
    ("P2D", timedelta(days=2)),
    ("PT1.5S", timedelta(seconds=1, milliseconds=500)),
    ("pt10m", timedelta(minutes=10)),
    ("-PT1H", timedelta(hours=-1)),
])
def test_durations_read_as_javas_duration_parse(text, duration):
    assert parse_duration(text) == duration


@pytest.mark.parametrize("text", ["30M", "P", "PT", "P1H", "P1DT", "1 day"])
def test_durations_java_refuses_are_refused(text):
    with pytest.raises(ResetSpecError):
        parse_duration(text)


def test_the_reset_file_in_both_of_kafkas_formats_and_export_writes_them():
    one = parse_reset_file("orders,0,5\norders,1,7\n", ["g"])
    assert one == {"g": {("orders", 0): 5, ("orders", 1): 7}}
    assert export_csv(one) == "orders,0,5\norders,1,7\n"
    many = parse_reset_file("g,orders,0,5\nh,orders,0,6\n", ["g"])
    assert many == {"g": {("orders", 0): 5}, "h": {("orders", 0): 6}}
    assert export_csv(many) == "g,orders,0,5\nh,orders,0,6\n"
    with pytest.raises(ResetSpecError, match="line 2"):
        parse_reset_file("orders,0,5\norders,1\n", ["g"])
    with pytest.raises(ResetSpecError, match="numbers"):
        parse_reset_file("orders,zero,5\n", ["g"])


@pytest.mark.parametrize(("group_type", "state", "members", "refusal"), [
    ("consumer", "Stable", 1, "Assignments can only be reset if the group 'g' is inactive, but the current state is Stable."),
    ("classic", "PreparingRebalance", 0,
     "Assignments can only be reset if the group 'g' is inactive, but the current state is PreparingRebalance."),
    ("streams", "Reconciling", 2,
     "Assignments can only be reset if the group 'g' is inactive, but the current state is Reconciling."),
    ("share", "Stable", 1, "Share group 'g' is not empty."),
])
def test_a_group_that_is_not_inactive_is_refused_in_the_words_of_its_kafka_tool(group_type, state, members, refusal):
    live = LiveGroupState("g", state, group_type, members, frozenset(), group_type=group_type)
    with pytest.raises(PlanError) as refused:
        check_resettable(live, ResetSpec(TO_EARLIEST))
    assert str(refused.value) == refusal
    check_resettable(replace(live, state="Empty", member_count=0), ResetSpec(TO_EARLIEST))
    check_resettable(replace(live, state="Dead", member_count=0, group_type=None), ResetSpec(SHIFT_BY, 1))


def test_where_each_kind_of_group_is_read_from():
    committed = {("in", 0): 5, ("repartition", 0): 7, ("other", 0): 1}
    streams = LiveGroupState("g", "Empty", "streams", 0, frozenset(), committed, "streams",
                             source_topics=frozenset({"in", "repartition"}), input_topics=frozenset({"in"}))
    assert current_offsets(streams) == {("in", 0): 5, ("repartition", 0): 7}  # getCommittedOffsets
    share = LiveGroupState("g", "Empty", "share", 0, frozenset(), {}, "share",
                           share_start_offsets={("in", 0): 3, ("in", 1): None})
    assert current_offsets(share) == {("in", 0): 3}
    consumer = LiveGroupState("g", "Empty", "consumer", 0, frozenset(), committed, "consumer")
    assert current_offsets(consumer) == committed
