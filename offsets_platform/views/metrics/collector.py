"""The lake as a prometheus_client collector: its families read anew on every collection.

The collector holds no state: each scrape or write asks `from_lake.collect` again, so the numbers
are those of the models' latest refresh.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from prometheus_client.registry import Collector, CollectorRegistry

from offsets_platform.lake import Lake
from offsets_platform.views.metrics.from_lake import Family, collect


class LakeCollector(Collector):
    """The lake's metric families (`from_lake.collect`, whose arguments these are)."""

    def __init__(self, lake: Lake, within_hours: float, watched_groups: Sequence[str] = ()) -> None:
        self.lake = lake
        self.within_hours = within_hours
        self.watched_groups = tuple(watched_groups)

    def collect(self) -> Iterable[Family]:
        """Every family of the lake as it is now.

        Raises:
            ValueError: two samples of one family with the same labels. prometheus_client would
                render both and the scraper reject the whole text, so this is a bug in what was
                read, told here rather than at the scraper.
        """
        families = collect(self.lake, self.within_hours, self.watched_groups)
        for family in families:
            _check_unique(family)
        return families


def lake_registry(lake: Lake, within_hours: float, watched_groups: Sequence[str] = ()) -> CollectorRegistry:
    """A registry of the lake's collector alone: no process or platform metrics of this Python,
    which describe the exporter rather than the lake."""
    registry = CollectorRegistry()
    registry.register(LakeCollector(lake, within_hours, watched_groups))
    return registry


def _check_unique(family: Family) -> None:
    seen: set[tuple] = set()
    for sample in family.samples:
        key = (sample.name, tuple(sorted(sample.labels.items())))
        if key in seen:
            raise ValueError(f"{family.name}: two samples with the labels {sample.labels}")
        seen.add(key)
