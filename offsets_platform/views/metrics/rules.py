"""The Prometheus alerting rules shipped for these metrics: `alerting_rules.yml` beside this module,
package data, so that `offsets-platform metrics --alerting-rules` prints them wherever the package is
installed (docs/metrics.md#alerting-rules)."""

from __future__ import annotations

from importlib.resources import files

RULES_FILE = "alerting_rules.yml"


def alerting_rules() -> str:
    """The rules file's text, as Prometheus's `rule_files` and `promtool check rules` read it."""
    return files(__package__).joinpath(RULES_FILE).read_text(encoding="utf-8")
