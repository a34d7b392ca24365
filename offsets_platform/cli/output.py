"""How the quick views print: aligned tables for people, JSON for scripts.

Tables follow Kafka's `kafka-consumer-groups`: upper-case headers, left-aligned columns, "-"
for a value that is not known.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Iterable

MISSING = "-"  # Kafka's tools print this for a value they do not know


def cell(value: object) -> str:
    if value is None:
        return MISSING
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}"
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def table_lines(columns: list[tuple[str, str]], rows: Iterable[dict]) -> list[str]:
    """(HEADER, key) columns over `rows`, each column as wide as its widest value, one space apart."""
    cells = [[cell(row.get(key)) for _, key in columns] for row in rows]
    headers = [header for header, _ in columns]
    widths = [max([len(header)] + [len(line[i]) for line in cells]) for i, header in enumerate(headers)]
    return [" ".join(value.ljust(width) for value, width in zip(line, widths)).rstrip()
            for line in [headers] + cells]


def as_json(value: object) -> str:
    """`value` as indented JSON; times as ISO 8601 strings."""
    return json.dumps(value, indent=2, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v))
