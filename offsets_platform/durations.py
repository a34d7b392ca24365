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
