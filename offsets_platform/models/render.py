"""Rendering a model's SQL: Jinja with `ref`, `source`, `var`, `this` and `is_incremental`.

`{{ ref('m') }}` and `{{ source('bronze', 't') }}` become the names of Spark temporary views
the runner registers. `{{ source('bronze', 't', new_only=true) }}` is, in an incremental run,
only the rows appended to `t` since the model last ran (the whole table otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jinja2

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
_ENV.filters["sql_string"] = lambda value: "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


class RenderError(ValueError):
    """The model's template could not be rendered; the message names the model."""


def new_rows_view(table: str) -> str:
    return f"{table}__new"


def this_view(model: str) -> str:
    return f"{model}__this"


@dataclass
class RenderContext:
    """What a model's template sees; records which refs and sources it used."""

    model: str
    variables: dict[str, Any] = field(default_factory=dict)
    incremental: bool = False
    refs: list[str] = field(default_factory=list)
    sources: list[tuple[str, str]] = field(default_factory=list)
    new_only_sources: list[str] = field(default_factory=list)
    sql: str = ""  # the rendered SQL, once `render` ran

    def ref(self, name: str) -> str:
        if name not in self.refs:
            self.refs.append(name)
        return name

    def source(self, layer: str, table: str, new_only: bool = False) -> str:
        if (layer, table) not in self.sources:
            self.sources.append((layer, table))
        if new_only and self.incremental:
            if table not in self.new_only_sources:
                self.new_only_sources.append(table)
            return new_rows_view(table)
        return table

    def var(self, name: str, default: Any = None) -> Any:
        if name in self.variables:
            return self.variables[name]
        if default is None:
            raise RenderError(f"model {self.model}: var({name!r}) is not set and has no default")
        return default

    def render(self, sql: str) -> str:
        try:
            return _ENV.from_string(sql).render(
                ref=self.ref, source=self.source, var=self.var, this=this_view(self.model),
                is_incremental=lambda: self.incremental)
        except RenderError:
            raise
        except jinja2.TemplateError as error:
            raise RenderError(f"model {self.model}: {error}") from None


def render(model: str, sql: str, variables: dict[str, Any] | None = None,
           incremental: bool = False) -> RenderContext:
    """Render once; the returned context holds the SQL (`.sql`) and what it referenced."""
    context = RenderContext(model=model, variables=dict(variables or {}), incremental=incremental)
    context.sql = context.render(sql)
    return context


def collect_references(sql: str, where: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The refs and sources a template uses (rendered with variables that accept any name)."""
    context = _Recording(model=where)
    context.render(sql)
    return tuple(context.refs), tuple(context.sources)


class _Recording(RenderContext):
    """Dependency discovery renders before any variable is known, so `var` never fails here."""

    def var(self, name: str, default: Any = None) -> Any:
        return default if default is not None else ""
