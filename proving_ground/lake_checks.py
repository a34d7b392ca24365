"""What the fault trials check in a lake: every table readable, no duplicate, no gap, and equal to a
lake made without a fault.

Each function returns a list of problems in words (empty: the check holds), so that a trial can say
what it found rather than stop at the first difference.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa

from offsets_platform.ingest.offsets_topic import CHECKPOINTS, PENDING
from offsets_platform.lake import TABLES
from offsets_platform.lake.lease import LEASES_FOLDER, current_holder
from offsets_platform.lake.tables import RECORD_TABLES
from offsets_platform.models import default_project
from offsets_platform.models.project import lake_for_models

# Columns that differ between two ingests of the same records: which run wrote a row, and when.
RUN_COLUMNS = ("ingest_run_id", "ingested_at")
INGEST_TABLES = (*RECORD_TABLES, CHECKPOINTS, PENDING)


def model_tables() -> list[str]:
    """The project's model tables."""
    return [model.name for model in default_project().models]


def unreadable(lake_root: Path, names: list[str] | tuple[str, ...]) -> list[str]:
    """The tables that a new reader of the lake cannot read in full."""
    lake, problems = lake_for_models(lake_root), []
    for name in names:
        try:
            lake.read_arrow(name)
        except Exception as error:  # any failure to read is the finding
            problems.append(f"{name} unreadable: {type(error).__name__}: {str(error)[:200]}")
    return problems


def held_leases(lake_root: Path) -> list[str]:
    """The lake's leases that still name a holder (once every process using the lake has ended,
    none should: the kernel released a killed holder's lock)."""
    folder = lake_root / LEASES_FOLDER
    names = sorted(path.stem for path in folder.glob("*.lock")) if folder.exists() else []
    return [f"the {name!r} lease still names {holder.describe()}" for name in names
            if (holder := current_holder(lake_root, name)) is not None]


def _keyed(lake_root: Path, name: str) -> tuple[dict[tuple, dict], int]:
    """A bronze table's rows by their key (without the run's columns), and its row count."""
    rows = lake_for_models(lake_root).read_arrow(name).to_pylist()
    keys = TABLES[name].keys
    keyed = {tuple(row[k] for k in keys): {c: v for c, v in row.items() if c not in RUN_COLUMNS} for row in rows}
    return keyed, len(rows)


def checkpointed(lake_root: Path) -> dict[int, int]:
    """partition -> the next offset the checkpoints say is not in bronze yet."""
    top: dict[int, int] = {}
    for row in lake_for_models(lake_root).read_arrow(CHECKPOINTS).to_pylist():
        top[row["source_partition"]] = max(top.get(row["source_partition"], 0), row["next_offset"])
    return top


def bronze_differences(lake_root: Path, reference_root: Path, *, partial: bool = False,
                       beyond_checkpoint: bool = True) -> list[str]:
    """How the record tables of `lake_root` differ from those of a clean ingest (`reference_root`).

    partial=False: each table must hold exactly the reference's rows, once each.
    partial=True (a run that was stopped): each table holds reference rows only, once each, and
    every reference row below its partition's checkpoint (no gap); rows above the checkpoint are
    allowed only when `beyond_checkpoint` (a run killed between a table's commit and the
    checkpoint's), else the table is exactly the checkpointed prefix.
    """
    problems = []
    next_offsets = checkpointed(lake_root) if partial else {}
    for name in RECORD_TABLES:
        rows, count = _keyed(lake_root, name)
        expected, _ = _keyed(reference_root, name)
        if count != len(rows):
            problems.append(f"{name}: {count - len(rows)} duplicate rows")
        foreign = [key for key, row in rows.items() if expected.get(key) != row]
        if foreign:
            problems.append(f"{name}: {len(foreign)} rows not as a clean ingest wrote them, e.g. {foreign[0]}")
        if partial:
            below = {key for key in expected if key[1] < next_offsets.get(key[0], 0)}
            missing = below - rows.keys()
            above = [key for key in rows if key[1] >= next_offsets.get(key[0], 0)]
            if not beyond_checkpoint and above:
                problems.append(f"{name}: {len(above)} rows beyond the checkpoint, e.g. {above[0]}")
        else:
            missing = expected.keys() - rows.keys()
        if missing:
            problems.append(f"{name}: {len(missing)} rows missing (a gap), e.g. {min(missing)}")
    if not partial and checkpointed(lake_root) != checkpointed(reference_root):
        problems.append("offsets_topic_checkpoints: the positions differ from a clean ingest's")
    return problems


def bronze_counts(lake_root: Path) -> int:
    """Rows in the record tables."""
    lake = lake_for_models(lake_root)
    return sum(lake.count(name) for name in RECORD_TABLES)


def _comparable(row: dict) -> str:
    return repr(sorted(row.items()))


# offset_commit_counts counts per run of records read together (its grain): an incremental
# refresh counts a minute whose records two runs read in two rows, a full refresh in one. What
# every history of runs agrees on is the sum per partition and minute (what coordinator_metrics
# adds up).
COUNTED_PER_RUN = {"offset_commit_counts": (["source_partition", "minute_start_at"], "count_offset_commits")}


def comparable_rows(name: str, table: pa.Table) -> list[str]:
    """A model table's rows as a sorted list that any refresh history giving the same answer
    gives too: the rows themselves, or the sums of a table counted per run."""
    if name in COUNTED_PER_RUN:
        keys, count = COUNTED_PER_RUN[name]
        table = table.group_by(keys).aggregate([(count, "sum")])
    return sorted(map(_comparable, table.to_pylist()))


def model_differences(lake_root: Path, reference_root: Path) -> list[str]:
    """The model tables of `lake_root` whose rows differ from those of `reference_root`."""
    problems = []
    lake, reference = lake_for_models(lake_root), lake_for_models(reference_root)
    for name in model_tables():
        rows = comparable_rows(name, lake.read_arrow(name))
        expected = comparable_rows(name, reference.read_arrow(name))
        if rows != expected:
            extra = len(set(rows) - set(expected))
            problems.append(f"{name}: {len(rows)} rows, a full refresh has {len(expected)} "
                            f"({extra} not in it, {len(set(expected) - set(rows))} of it missing)")
    return problems


def model_runs_per_model(lake_root: Path) -> dict[str, int]:
    """model -> how many runs model_runs recorded."""
    runs: dict[str, set[str]] = {}
    for row in lake_for_models(lake_root).read_arrow("model_runs").to_pylist():
        runs.setdefault(row["model"], set()).add(row["run_id"])
    return {model: len(ids) for model, ids in runs.items()}


def copy_lake(source_root: Path, target_root: Path, layers: tuple[str, ...] | None = None) -> Path:
    """A copy of the lake (or of some of its layers) in a new folder; Delta logs name their files
    relative to the table, so a copied table reads as the original."""
    target_root.mkdir(parents=True)
    for folder in sorted(source_root.iterdir()):
        if layers is None or folder.name in layers:
            shutil.copytree(folder, target_root / folder.name)
    return target_root
