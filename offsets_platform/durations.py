"""Durations as a person reads them, the same on every surface (command line, report, Dagster UI)."""

from __future__ import annotations


def age_text(seconds: float) -> str:
    """3725 -> "1h 2m": the two largest units of days, hours, minutes and seconds."""
    remaining, parts = int(seconds), []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        if remaining >= size or parts or unit == "s":
            parts.append(f"{remaining // size}{unit}")
            remaining %= size
    return " ".join(parts[:2])


def time_left_text(hours: float) -> str:
    """Hours until something Kafka does on its own: "due now" once due (an offset past its expiry
    goes at Kafka's next retention check, not "-48 hours" from now), else as `age_text`."""
    return "due now" if hours <= 0 else age_text(hours * 3600)
