"""Rendering a model's SQL: Jinja with `ref`, `source`, `var`, `this`, `is_incremental`,
`lake_timestamp` and the filter `sql_string`.

`{{ ref('m') }}` and `{{ source('bronze', 't') }}` become the names of Spark temporary views
the runner registers. `{{ source('bronze', 't', new_only=true) }}` is, in an incremental run,
only the rows appended to `t` since the model last ran (the whole table otherwise).
`{{ ref('m', at_last_run=true) }}`, allowed only in an incremental run, is model `m`'s table as
this model saw it in its last run: the state of `m` before the rows that are new now.
`{{ lake_timestamp('expires_at_ms') }}` is the timestamp of a column of Kafka's milliseconds, null
outside the years 1-9999 that the lake's timestamps hold (offsets_platform.lake.timestamp_range).

A ref to an ephemeral model (a staging model: never run, no table) renders to that model's SQL
between parentheses, a subquery, rendered here, in the referencing model's context: the sources
it reads are recorded as the referencing model's, `is_incremental()` and `{{ this }}` are the
referencing model's. `{{ ref('stg_x', new_only=true) }}` reads every source of `stg_x` with
`new_only=true`: in an incremental run, the staging model over only the rows appended since the
referencing model's last run. This keeps staging models free of incremental logic: the model
that merges decides what it reads. `new_only` on a ref to a model with a table is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jinja2

from offsets_platform.lake.sql_literals import spark_string
from offsets_platform.lake.timestamp_range import lake_timestamp_sql

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
_ENV.filters["sql_string"] = spark_string


class RenderError(ValueError):
    """The model's template could not be rendered; the message names the model."""


# Views a model reads differently from other models are named after the model too: models of one
# refresh may run at the same time on one SparkSession, whose temporary views are shared.
def new_rows_view(model: str, table: str) -> str:
    return f"{model}__{table}__new"


def this_view(model: str) -> str:
    return f"{model}__this"


def at_last_run_view(model: str, ref: str) -> str:
    return f"{model}__{ref}__at_last_run"


@dataclass
class RenderContext:
    """What a model's template sees; records which refs and sources it used."""

    model: str
    variables: dict[str, Any] = field(default_factory=dict)
    incremental: bool = False
    refs: list[str] = field(default_factory=list)
    refs_at_last_run: list[str] = field(default_factory=list)
    variables_used: list[str] = field(default_factory=list)
    sources: list[tuple[str, str]] = field(default_factory=list)
    new_only_sources: list[str] = field(default_factory=list)
    ephemerals: dict[str, str] = field(default_factory=dict)  # ephemeral model -> its SQL template
    sql: str = ""  # the rendered SQL, once `render` ran
    _inlining: list[tuple[str, bool]] = field(default_factory=list)  # ephemeral models being rendered, new_only

    def ref(self, name: str, at_last_run: bool = False, new_only: bool = False) -> str:
        if name not in self.refs:
            self.refs.append(name)
        if name in self.ephemerals and not at_last_run:
            return self._inline(name, new_only)
        if new_only:
            raise RenderError(f"model {self.model}: ref({name!r}, new_only=true) needs an ephemeral model; "
                              "a model with a table is read whole")
        if not at_last_run:
            return name
        if not self.incremental:
            raise RenderError(f"model {self.model}: ref({name!r}, at_last_run=true) is only defined in an "
                              "incremental run; use it inside {% if is_incremental() %}")
        if name not in self.refs_at_last_run:
            self.refs_at_last_run.append(name)
        return at_last_run_view(self.model, name)

    def _inline(self, name: str, new_only: bool) -> str:
        if any(inlining == name for inlining, _ in self._inlining):
            raise RenderError(f"model {self.model}: ephemeral models ref each other in a cycle through {name!r}")
        # new_only holds for everything inside, down to the sources of nested ephemeral models
        self._inlining.append((name, new_only or any(outer for _, outer in self._inlining)))
        try:
            sql = self._render_template(self.ephemerals[name])
        finally:
            self._inlining.pop()
        return "(\n" + sql.strip().rstrip(";") + "\n)"

    def source(self, layer: str, table: str, new_only: bool = False) -> str:
        new_only = new_only or any(inlined_new_only for _, inlined_new_only in self._inlining)
        if (layer, table) not in self.sources:
            self.sources.append((layer, table))
        if new_only and self.incremental:
            if table not in self.new_only_sources:
                self.new_only_sources.append(table)
            return new_rows_view(self.model, table)
        return table

    def var(self, name: str, default: Any = None) -> Any:
        if name not in self.variables_used:
            self.variables_used.append(name)
        if name in self.variables:
            return self.variables[name]
        if default is None:
            raise RenderError(f"model {self.model}: var({name!r}) is not set and has no default")
        return default

    def render(self, sql: str) -> str:
        try:
            return self._render_template(sql)
        except RenderError:
            raise
        except jinja2.TemplateError as error:
            raise RenderError(f"model {self.model}: {error}") from None


    def _render_template(self, sql: str) -> str:
        return _ENV.from_string(sql).render(
            ref=self.ref, source=self.source, var=self.var, this=this_view(self.model),
            is_incremental=lambda: self.incremental, lake_timestamp=lake_timestamp_sql)


def render(model: str, sql: str, variables: dict[str, Any] | None = None,
           incremental: bool = False, ephemerals: dict[str, str] | None = None) -> RenderContext:
    """Render once; the returned context holds the SQL (`.sql`) and what it referenced.
    `ephemerals`: the project's ephemeral models and their SQL, inlined where ref'd."""
    context = RenderContext(model=model, variables=dict(variables or {}), incremental=incremental,
                            ephemerals=dict(ephemerals or {}))
    context.sql = context.render(sql)
    return context


@dataclass(frozen=True)
class References:
    """What a template uses, in either kind of run."""

    refs: tuple[str, ...]
    refs_at_last_run: tuple[str, ...]
    sources: tuple[tuple[str, str], ...]
    variables: tuple[str, ...]


def collect_references(sql: str, where: str) -> References:
    """The refs, sources and variables a template uses, rendered as a full and as an incremental
    run (each branch of `is_incremental()`), with variables that accept any name."""
    contexts = [_Recording(model=where, incremental=incremental) for incremental in (False, True)]
    for context in contexts:
        context.render(sql)

    def union(attribute: str) -> tuple:
        return tuple(dict.fromkeys(item for context in contexts for item in getattr(context, attribute)))

    return References(refs=union("refs"), refs_at_last_run=union("refs_at_last_run"), sources=union("sources"),
                      variables=union("variables_used"))


class _Recording(RenderContext):
    """Dependency discovery renders before any variable is known, so `var` never fails here."""

    def var(self, name: str, default: Any = None) -> Any:
        super().var(name, default="")  # records the name
        return default if default is not None else ""

    def ref(self, name: str, at_last_run: bool = False, new_only: bool = False) -> str:
        # which models are ephemeral is known only once the project is loaded: the project takes
        # in their references, and rendering for a run checks new_only
        return super().ref(name, at_last_run=at_last_run)
