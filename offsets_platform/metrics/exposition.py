"""Metric families and their two text encodings: OpenMetrics 1.0.0 and Prometheus's text format 0.0.4.

Both are written here rather than with a client library: the exporter only renders what it read
from the lake, once per scrape, so it needs no registry, no collectors and no state. Prometheus
asks for OpenMetrics; node_exporter's textfile collector parses only the older format, which
differs in three places: a counter's family is named with its `_total` (OpenMetrics names the
family without it and only the sample with it), `# HELP` does not escape double quotes, and there
is no `# EOF`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass
class Family:
    """One metric family: its samples share a name, a type and a help text; label sets are unique."""

    name: str
    """Without `_total`: a counter's samples get the suffix in both encodings."""
    kind: str  # "counter" or "gauge"
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.kind not in ("counter", "gauge"):
            raise ValueError(f"{self.name}: unsupported metric type {self.kind!r}")
        if not _METRIC_NAME.fullmatch(self.name) or self.name.endswith("_total"):
            raise ValueError(f"invalid family name {self.name!r} (a counter's _total is added when rendered)")

    def add(self, value: float | None, **labels: object) -> None:
        """A sample; None (a value the lake does not know) adds nothing, as 0 would be a claim."""
        if value is None:
            return
        for name in labels:
            if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
                raise ValueError(f"{self.name}: invalid label name {name!r}")
        self.samples.append(({name: str(label) for name, label in labels.items()}, value))


def render(families: list[Family], openmetrics: bool = True) -> str:
    """The exposition text: OpenMetrics 1.0.0 (ends with `# EOF`), or Prometheus's text format 0.0.4.

    Raises:
        ValueError: two samples of one family with the same labels (a scraper rejects the whole
            text, so this is a bug in what was read, told here rather than at the scraper).
    """
    lines: list[str] = []
    for family in families:
        sample_name = family.name + "_total" if family.kind == "counter" else family.name
        declared = family.name if openmetrics else sample_name
        lines.append(f"# HELP {declared} {_escape_help(family.help, openmetrics)}")
        lines.append(f"# TYPE {declared} {family.kind}")
        seen: set[tuple] = set()
        for labels, value in family.samples:
            key = tuple(sorted(labels.items()))
            if key in seen:
                raise ValueError(f"{family.name}: two samples with the labels {dict(key)}")
            seen.add(key)
            lines.append(f"{sample_name}{_labels(labels)} {_value(value)}")
    if openmetrics:
        lines.append("# EOF")
    return "\n".join(lines) + "\n"


def escape_label_value(value: str) -> str:
    """A label value between double quotes, in both formats: backslash, double quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str, openmetrics: bool) -> str:
    escaped = text.replace("\\", "\\\\").replace("\n", "\\n")
    return escaped.replace('"', '\\"') if openmetrics else escaped


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{name}="{escape_label_value(value)}"' for name, value in labels.items()) + "}"


def _value(value: float) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
