"""The dbt-like project: one SELECT per model in `dbt_like_sql/<layer>/`, one YAML per layer.

A model is `<layer>/<name>.sql`. The layer's `<layer>.yml` gives each model its description,
grain, meaning in Kafka's terms, materialization, unique key, columns (name, Spark SQL type, description, tests) and
model-level tests; an incremental model may also name in `delete_when` a boolean column of its
result (not of its table) whose true rows delete the table's rows with the same key, and in
`incremental_strategy` how its result reaches the table (INCREMENTAL_STRATEGIES), and in
`full_when_small` and `full_when_mostly_new` when a full run costs it less than an incremental one.
`sources.yml` lists the bronze tables models may read, with their own tests.
Loading the project checks everything that can be checked without running SQL: every model has
both its SQL and its YAML, names are unique, every `ref` names a model and every `source` a
registered table, and the refs form no cycle. Models come back in an order where each one
follows the models it refs.

A model declared `materialized: ephemeral` (a staging model) is never run and has no table: a
`ref` to it is replaced by its SQL, rendered in the referencing model's run. What the referencing
model records as its own (`refs`, `sources`, `variables`, `code_version`) therefore includes what
its ephemeral models use, transitively: a change of a staging model's SQL reruns its users, and a
new file in a source a staging model reads makes its users' inputs change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import yaml

from offsets_platform import sql_project
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import TABLES, TableSpec
from offsets_platform.models.column_types import arrow_schema
from offsets_platform.models.render import collect_references

# dbt_like_sql/, installed as offsets_platform.sql_project (setup.py): found the same way from a
# checkout and from a wheel
DEFAULT_PROJECT_DIR = Path(sql_project.__file__).resolve().parent
MATERIALIZATIONS = ("table", "incremental", "ephemeral")
# How an incremental model's result reaches its table: `merge`, Delta's MERGE INTO, which rewrites
# only the data files holding a key of the result; `rewrite`, the table written anew from its rows
# whose key the result lacks and the result's rows, in one pass. A state whose every refresh
# updates keys spread over the whole table (each data file holds some) is rewritten whatever the
# strategy, and Delta's MERGE reads it twice to do so (once to find the files, once to rewrite
# them): `rewrite` costs about half (benchmarks/README.md). `merge` suits a table whose new rows
# are mostly new keys, which a merge appends without rewriting a file. `replace`: the incremental
# query returns the table's whole new content, from the rows it kept ({{ this }}) and the new
# ones, and the table is overwritten with it. It suits a state bounded by what it keeps (a window
# per partition), not by the history: a run then costs what the new rows and the state cost,
# however large the batch, and its query can keep each partition's top rows before Spark's
# shuffle as a full run's does.
INCREMENTAL_STRATEGIES = ("merge", "rewrite", "replace")


class ProjectError(ValueError):
    """The project's SQL or YAML is inconsistent; the message says where and how."""


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str
    description: str = ""
    tests: tuple = ()


@dataclass(frozen=True)
class Model:
    name: str
    layer: str
    sql: str
    sql_path: Path
    description: str
    grain: str
    materialized: str
    unique_key: tuple[str, ...]
    columns: tuple[Column, ...]
    tests: tuple = ()
    refs: tuple[str, ...] = ()
    refs_at_last_run: tuple[str, ...] = ()  # refs also read as they were at this model's last run
    sources: tuple[tuple[str, str], ...] = ()
    variables: tuple[str, ...] = ()  # the var() names the SQL uses
    in_kafka: str = ""  # what the table means in Kafka's terms
    inlines: tuple[str, ...] = ()  # the ephemeral models whose SQL this one's takes in, directly or not
    inlined_code: str = ""  # their code versions: a change there is a change of this model's code
    # incremental only: the boolean column of the result whose true rows delete the table's row with
    # their unique key (a state that drops what can no longer matter); not a column of the table
    delete_when: str = ""
    incremental_strategy: str = "merge"  # incremental only: INCREMENTAL_STRATEGIES
    # incremental only: run full while the sources hold little data, where the incremental plan,
    # larger than the full one, costs more than the full run (ModelRunner.full_when_small_max_bytes)
    full_when_small: bool = False
    # incremental only: run full when most of the sources' data is new since the last run, where
    # the incremental plan over so many new rows costs more than the full run
    # (ModelRunner.full_run_new_share)
    full_when_mostly_new: bool = False

    @property
    def ephemeral(self) -> bool:
        return self.materialized == "ephemeral"

    @property
    def code_version(self) -> str:
        """Changes when the SQL or the declared columns change (Dagster marks the asset stale), or
        those of an ephemeral model it refs."""
        declared = "".join(f"{c.name}:{c.data_type};" for c in self.columns)
        how = self.materialized + self.delete_when
        return hashlib.sha256((self.sql + declared + how + self.inlined_code).encode()).hexdigest()[:16]

    def table_spec(self) -> TableSpec:
        schema = arrow_schema([(c.name, c.data_type) for c in self.columns], where=f"model {self.name}")
        return TableSpec(name=self.name, layer=self.layer, schema=schema, keys=self.unique_key,
                         description=self.description)


@dataclass(frozen=True)
class Source:
    """A bronze table that models read, with the tests declared for it in sources.yml."""

    name: str
    layer: str
    tests: tuple = ()


@dataclass
class ModelProject:
    path: Path
    models: list[Model]  # the models that run and have a table, in run order: each after the models it refs
    sources: dict[str, Source] = field(default_factory=dict)
    ephemeral: dict[str, Model] = field(default_factory=dict)  # never run: their SQL is inlined where ref'd

    def model(self, name: str) -> Model:
        for model in self.models:
            if model.name == name:
                return model
        if name in self.ephemeral:
            raise KeyError(f"model {name!r} is ephemeral: it never runs, the models that ref it take in its SQL")
        raise KeyError(f"unknown model {name!r}; models: {', '.join(m.name for m in self.models)}")

    def ephemeral_sql(self) -> dict[str, str]:
        """Each ephemeral model's SQL template, for rendering the models that ref them."""
        return {name: model.sql for name, model in self.ephemeral.items()}

    def downstream(self, names: set[str]) -> list[Model]:
        """The named models and every model that refs them or inlines them, directly or not, in run order."""
        selected = set(names)
        for model in self.models:
            if selected & (set(model.refs) | set(model.inlines)):
                selected.add(model.name)
        return [m for m in self.models if m.name in selected]

    def upstream(self, names: set[str]) -> list[Model]:
        """The named models and every model they ref, directly or not, in run order: what a
        refresh of just those models needs."""
        selected = set(names)
        for model in reversed(self.models):
            if model.name in selected:
                selected |= set(model.refs)
        return [m for m in self.models if m.name in selected]


def load_project(path: str | Path = DEFAULT_PROJECT_DIR) -> ModelProject:
    """Read and check the project at `path`; raises ProjectError naming the file and model."""
    path = Path(path)
    if not path.is_dir():
        raise ProjectError(f"no dbt-like project at {path}")
    sources = _load_sources(path / "sources.yml")
    models: dict[str, Model] = {}
    for layer_dir in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        for model in _load_layer(layer_dir):
            if model.name in models:
                other = models[model.name]
                raise ProjectError(f"duplicate model name {model.name!r}: {other.sql_path.relative_to(path)} "
                                   f"and {model.sql_path.relative_to(path)}")
            if model.name in TABLES:
                raise ProjectError(f"model {model.name!r} has the name of a bronze table")
            models[model.name] = model
    for model in models.values():
        for ref in model.refs:
            if ref not in models:
                raise ProjectError(f"model {model.name!r} ({model.sql_path.relative_to(path)}) refs "
                                   f"{ref!r}, which is not a model; models: {', '.join(sorted(models))}")
        for layer, table in model.sources:
            if table not in sources or sources[table].layer != layer:
                raise ProjectError(f"model {model.name!r} reads source({layer!r}, {table!r}), which "
                                   f"sources.yml does not declare")
    resolved: dict[str, Model] = {}
    for name in _run_order(models):  # an ephemeral model before the models that ref it
        resolved[name] = _with_ephemerals(models[name], resolved)
    return ModelProject(path=path, models=[m for m in resolved.values() if not m.ephemeral], sources=sources,
                        ephemeral={name: m for name, m in resolved.items() if m.ephemeral})


def _with_ephemerals(model: Model, resolved: dict[str, Model]) -> Model:
    """The model with the refs, sources and variables of the ephemeral models it refs (already
    resolved, so transitively) taken in as its own, and their code versions in its own."""
    inlined = [resolved[ref] for ref in model.refs if resolved[ref].ephemeral]
    if not inlined:
        return model
    where = f"{model.layer}/{model.sql_path.name}"
    for ref in model.refs_at_last_run:
        if resolved[ref].ephemeral:
            raise ProjectError(f"{where}: ref({ref!r}, at_last_run=true) names an ephemeral model, which has no table")

    def union(*groups) -> tuple:
        return tuple(dict.fromkeys(item for group in groups for item in group))

    refs = union([ref for ref in model.refs if not resolved[ref].ephemeral], *(m.refs for m in inlined))
    variables = union(model.variables, *(m.variables for m in inlined))
    return replace(model, refs=refs, sources=union(model.sources, *(m.sources for m in inlined)),
                   variables=variables, inlines=union(*((*m.inlines, m.name) for m in inlined)),
                   inlined_code="".join(f"{m.name}:{m.code_version};" for m in inlined))


def _run_order(models: dict[str, Model]) -> list[str]:
    """Every model after the models it refs; among models ready together, by name (stable)."""
    sorter = TopologicalSorter({m.name: m.refs for m in models.values()})
    try:
        sorter.prepare()
    except CycleError as error:
        raise ProjectError(f"models ref each other in a cycle: {' -> '.join(error.args[1])}") from None
    order = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        order += ready
        sorter.done(*ready)
    return order


def _load_sources(path: Path) -> dict[str, Source]:
    if not path.exists():
        return {}
    document = yaml.safe_load(path.read_text()) or {}
    sources = {}
    for group in document.get("sources", []):
        for table in group.get("tables", []):
            name = table["name"]
            if name not in TABLES:
                raise ProjectError(f"{path.name}: source {name!r} is not a registered table")
            sources[name] = Source(name=name, layer=group["name"], tests=tuple(table.get("tests", ())))
    return sources


def _load_layer(layer_dir: Path) -> list[Model]:
    layer = layer_dir.name
    yml = layer_dir / f"{layer}.yml"
    sql_files = {p.stem: p for p in sorted(layer_dir.glob("*.sql"))}
    if not yml.exists():
        if sql_files:
            raise ProjectError(f"{layer}/ has SQL models but no {yml.name}")
        return []
    entries = (yaml.safe_load(yml.read_text()) or {}).get("models", [])
    declared = [entry["name"] for entry in entries]
    duplicates = sorted({name for name in declared if declared.count(name) > 1})
    if duplicates:
        raise ProjectError(f"{layer}/{yml.name} declares duplicate model names: {duplicates}")
    undeclared = sorted(set(sql_files) - set(declared))
    if undeclared:
        raise ProjectError(f"{layer}/: SQL without an entry in {yml.name}: {undeclared}")
    models = []
    for entry in entries:
        name = entry["name"]
        if name not in sql_files:
            raise ProjectError(f"{layer}/{yml.name} declares model {name!r} but {layer}/{name}.sql is missing")
        models.append(_model(layer, sql_files[name], entry))
    return models


def _model(layer: str, sql_path: Path, entry: dict) -> Model:
    name = entry["name"]
    where = f"{layer}/{sql_path.name}"
    materialized = entry.get("materialized", "table")
    if materialized not in MATERIALIZATIONS:
        raise ProjectError(f"{where}: materialized must be one of {MATERIALIZATIONS}, not {materialized!r}")
    unique_key = tuple(entry.get("unique_key", ()))
    if materialized == "ephemeral" and unique_key:
        raise ProjectError(f"{where}: an ephemeral model has no table to merge into, so no unique_key")
    if materialized == "incremental" and not unique_key:
        raise ProjectError(f"{where}: an incremental model needs a unique_key to merge on")
    columns = tuple(Column(name=c["name"], data_type=c["data_type"], description=c.get("description", ""),
                           tests=tuple(c.get("tests", ()))) for c in entry.get("columns", ()))
    if not columns:
        raise ProjectError(f"{where}: the YAML entry declares no columns")
    missing_keys = sorted(set(unique_key) - {c.name for c in columns})
    if missing_keys:
        raise ProjectError(f"{where}: unique_key columns {missing_keys} are not declared columns")
    sql = sql_path.read_text()
    used = collect_references(sql, where)
    delete_when = entry.get("delete_when", "")
    if delete_when and materialized != "incremental":
        raise ProjectError(f"{where}: delete_when removes rows merged in earlier runs: only an incremental model has them")
    if delete_when in {c.name for c in columns}:
        raise ProjectError(f"{where}: delete_when's column {delete_when!r} is the result's, not the table's: "
                           "it must not be a declared column")
    if materialized == "ephemeral" and used.refs_at_last_run:
        # it is rendered inside other models, whose last runs are theirs, not its own
        raise ProjectError(f"{where}: an ephemeral model cannot use ref(..., at_last_run=true)")
    if used.refs_at_last_run and materialized != "incremental":
        raise ProjectError(f"{where}: ref(..., at_last_run=true) needs an incremental model")
    strategy = entry.get("incremental_strategy", "merge")
    if strategy not in INCREMENTAL_STRATEGIES:
        raise ProjectError(f"{where}: incremental_strategy must be one of {INCREMENTAL_STRATEGIES}, not {strategy!r}")
    if "incremental_strategy" in entry and materialized != "incremental":
        raise ProjectError(f"{where}: incremental_strategy says how a result is merged: only an incremental model has one")
    full_when = {key: entry.get(key, False) for key in ("full_when_small", "full_when_mostly_new")}
    for key, value in full_when.items():
        if not isinstance(value, bool):
            raise ProjectError(f"{where}: {key} must be true or false, not {value!r}")
        if value and materialized != "incremental":
            raise ProjectError(f"{where}: {key} chooses between a full and an incremental run: "
                               "only an incremental model has both")
    return Model(name=name, layer=layer, sql=sql, sql_path=sql_path, description=entry.get("description", ""),
                 grain=entry.get("grain", ""), in_kafka=entry.get("in_kafka", ""), materialized=materialized, unique_key=unique_key,
                 columns=columns, tests=tuple(entry.get("tests", ())), refs=used.refs, delete_when=delete_when,
                 incremental_strategy=strategy, **full_when,
                 refs_at_last_run=used.refs_at_last_run, sources=used.sources, variables=used.variables)


@lru_cache(maxsize=None)
def default_project() -> ModelProject:
    """The project shipped with the package (`dbt_like_sql/` in the repository; loaded once per process)."""
    return load_project(DEFAULT_PROJECT_DIR)


def model_table_specs(project: ModelProject | None = None) -> dict[str, TableSpec]:
    """The table specs of a project's models (default: the shipped one), to hand to a `Lake`.
    Ephemeral models have none: they are not in `project.models`."""
    return {model.name: model.table_spec() for model in (project or default_project()).models}


def lake_for_models(root: str | Path, project: ModelProject | None = None, *, leases: str | Path | None = None) -> Lake:
    """The lake under `root` (a folder, or an `s3://` URI), knowing the project's model tables
    (default: the shipped one's) as well as its own: the lake cannot look them up itself, since
    the project depends on it. `leases`: see `Lake`."""
    return Lake(root, model_tables=model_table_specs(project), leases=leases)
