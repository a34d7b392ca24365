"""Where an offset reset puts each partition: the specifiers of Kafka's `--reset-offsets`, as rules.

Pure logic on facts the broker gave (log start and end, the offset ListOffsets found for a time,
the group's committed offset); `reset_plans.py` asks the broker for them. Each rule follows Kafka's
own tools: `OffsetsUtils` in Kafka 4.3's tools (`GroupOffsetsResetter` in later versions), which
`kafka-consumer-groups`, `kafka-streams-groups` and `kafka-share-groups` share:

- `--to-earliest` / `--to-latest`: the log start / end (ListOffsets EARLIEST / LATEST).
- `--to-current`: the committed offset; where the group has none, the log end (`resetToCurrent`).
- `--to-offset N`, `--shift-by N` (from the committed offset; none is an error) and `--from-file`:
  the requested offset clamped to the log's range as `checkOffsetsRange` clamps: above the log end
  it becomes the log end, else below the log start it becomes the log start.
- `--to-datetime` and `--by-duration` (now minus the duration): the first offset whose timestamp
  is at or after the time (ListOffsets by timestamp); where the partition has none, the log end
  (`getLogTimestampOffsets`: "Falling back to latest known offset"). Not clamped.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

TO_EARLIEST = "to-earliest"
TO_LATEST = "to-latest"
TO_CURRENT = "to-current"
TO_OFFSET = "to-offset"
SHIFT_BY = "shift-by"
TO_DATETIME = "to-datetime"
BY_DURATION = "by-duration"
FROM_FILE = "from-file"
SPECIFIERS = (TO_EARLIEST, TO_LATEST, TO_CURRENT, TO_OFFSET, SHIFT_BY, TO_DATETIME, BY_DURATION, FROM_FILE)
# the specifiers that need ListOffsets by timestamp
BY_TIME = (TO_DATETIME, BY_DURATION)

CLAMPED_TO_LOG_END = "log end"
CLAMPED_TO_LOG_START = "log start"


class ResetSpecError(ValueError):
    """A specifier, scope or file Kafka's tool would refuse; the message says why."""


@dataclass(frozen=True)
class ResetSpec:
    """One specifier and its argument: an int (to-offset, shift-by), epoch milliseconds (to-datetime,
    by-duration once resolved against a time), or the file's offsets by (group, topic, partition)."""

    kind: str
    value: int | dict | None = None
    text: str = ""  # as the operator gave it, for the plan's facts

    def describe(self) -> str:
        return f"--{self.kind}" + (f" {self.text}" if self.text else "")


@dataclass(frozen=True)
class PartitionFacts:
    """What the broker said about one partition when the plan was made."""

    log_start: int
    log_end: int
    current: int | None  # the group's committed offset (a share group's start offset); None where it has none
    at_time: int | None = None  # ListOffsets by timestamp; None where no record is that late


@dataclass(frozen=True)
class ResetTarget:
    target: int
    requested: int  # before clamping
    clamped_to: str | None  # CLAMPED_TO_LOG_END, CLAMPED_TO_LOG_START or None

    def messages_read_again(self, facts: PartitionFacts) -> int | None:
        """Messages still in the log that the group read and will read again (target below its
        offset); None without a committed offset (where it starts then depends on the consumer's
        auto.offset.reset)."""
        if facts.current is None:
            return None
        return max(0, min(facts.current, facts.log_end) - self.target)

    def messages_skipped(self, facts: PartitionFacts) -> int | None:
        """Messages still in the log that the group has not read and never will (target above its
        offset); those below the log start are gone already. None without a committed offset."""
        if facts.current is None:
            return None
        return max(0, self.target - max(facts.current, facts.log_start))


def target_of(spec: ResetSpec, facts: PartitionFacts, requested_in_file: int | None = None) -> ResetTarget:
    """The new offset of one partition under `spec` (see the module's rules).

    Raises:
        ResetSpecError: --shift-by on a partition without a committed offset, as Kafka's tool.
    """
    if spec.kind == TO_EARLIEST:
        return ResetTarget(facts.log_start, facts.log_start, None)
    if spec.kind == TO_LATEST:
        return ResetTarget(facts.log_end, facts.log_end, None)
    if spec.kind == TO_CURRENT:
        offset = facts.log_end if facts.current is None else facts.current
        return ResetTarget(offset, offset, None)
    if spec.kind in BY_TIME:
        offset = facts.log_end if facts.at_time is None else facts.at_time
        return ResetTarget(offset, offset, None)
    if spec.kind == TO_OFFSET:
        return _clamped(int(spec.value), facts)
    if spec.kind == SHIFT_BY:
        if facts.current is None:
            raise ResetSpecError("cannot shift the offset of a partition without a committed offset")
        return _clamped(facts.current + int(spec.value), facts)
    if spec.kind == FROM_FILE:
        return _clamped(requested_in_file, facts)
    raise ResetSpecError(f"unknown specifier {spec.kind!r}")


def _clamped(requested: int, facts: PartitionFacts) -> ResetTarget:
    # the log end is checked first, as checkOffsetsRange does
    if requested > facts.log_end:
        return ResetTarget(facts.log_end, requested, CLAMPED_TO_LOG_END)
    if requested < facts.log_start:
        return ResetTarget(facts.log_start, requested, CLAMPED_TO_LOG_START)
    return ResetTarget(requested, requested, None)


def parse_datetime_ms(text: str) -> int:
    """Epoch milliseconds of `YYYY-MM-DDTHH:mm:SS.sss` with an optional zone (`Z`, `+hh:mm`, `+hhmm`,
    `+hh`), UTC when none, as Kafka's `Utils.getDateTime` reads `--to-datetime`."""
    if "T" not in text:
        raise ResetSpecError(f"error parsing timestamp {text!r}: it does not contain a 'T' according to ISO8601 format")
    match = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})"
                         r"(Z|[+-]\d{2}(?::?\d{2})?)?", text)
    if not match:
        raise ResetSpecError(f"error parsing timestamp {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss with an "
                             "optional zone (Z, +hh:mm)")
    year, month, day, hour, minute, second, millis = (int(match.group(i)) for i in range(1, 8))
    zone = match.group(8) or "Z"
    offset = timedelta(0)
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        offset = -offset if zone[0] == "-" else offset
    try:
        moment = datetime(year, month, day, hour, minute, second, millis * 1000, tzinfo=timezone(offset))
    except ValueError as error:
        raise ResetSpecError(f"error parsing timestamp {text!r}: {error}") from None
    millis_since_epoch = (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
    if millis_since_epoch < 0:
        # ListOffsets reads a negative timestamp as a special one (-1 latest, -2 earliest, ...)
        raise ResetSpecError(f"timestamp {text!r} is before 1970-01-01T00:00:00.000Z")
    return millis_since_epoch


_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
                       re.IGNORECASE)


def parse_duration(text: str) -> timedelta:
    """An ISO-8601 duration `PnDTnHnMn.nS`, as Java's `Duration.parse` reads `--by-duration`."""
    match = _DURATION.fullmatch(text)
    if not match or not any(match.group(i) for i in (2, 3, 4, 5)) or text.upper().endswith("T"):
        raise ResetSpecError(f"invalid duration {text!r}: expected ISO-8601 PnDTnHnMn.nS (e.g. P1DT2H or PT30M)")
    days, hours, minutes, seconds = (int(match.group(i) or 0) for i in (2, 3, 4, 5))
    fraction = (match.group(6) or "").ljust(9, "0")
    nanos = int(fraction) * (-1 if match.group(5) and match.group(5).startswith("-") else 1)
    duration = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds, microseconds=nanos // 1000)
    return -duration if match.group(1) == "-" else duration


def parse_reset_file(text: str, groups: list[str]) -> dict[str, dict[tuple[str, int], int]]:
    """The offsets of a `--from-file` CSV by group: `topic,partition,offset` lines when one group is
    named and the first line has three fields, else `group,topic,partition,offset` lines (Kafka's
    `parseResetPlan`; the same lines `--export` writes)."""
    rows = [row for row in csv.reader(io.StringIO(text)) if row]
    with_group = not (len(groups) == 1 and rows and len(rows[0]) == 3)
    plan: dict[str, dict[tuple[str, int], int]] = {}
    for number, row in enumerate(rows, 1):
        if len(row) != (4 if with_group else 3):
            raise ResetSpecError(f"line {number} of the reset file has {len(row)} fields; expected "
                                 + ("group,topic,partition,offset" if with_group else "topic,partition,offset"))
        group, topic, partition, offset = row if with_group else (groups[0], *row)
        try:
            plan.setdefault(group, {})[(topic, int(partition))] = int(offset)
        except ValueError:
            raise ResetSpecError(f"line {number} of the reset file: partition and offset must be numbers") from None
    return plan


def export_csv(group_offsets: dict[str, dict[tuple[str, int], int]]) -> str:
    """Kafka's `--export` CSV: `topic,partition,offset` for one group, `group,topic,partition,offset`
    for more."""
    single = len(group_offsets) == 1
    lines = [",".join(map(str, ((topic, partition, offset) if single else (group, topic, partition, offset))))
             for group, offsets in group_offsets.items() for (topic, partition), offset in offsets.items()]
    return "".join(line + "\n" for line in lines)
