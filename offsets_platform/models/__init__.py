"""The dbt-like SQL models: project loading, rendering, and the runner."""

from offsets_platform.models.project import (Model, ModelProject, ProjectError, default_project, lake_for_models,
                                             load_project)

__all__ = ["Model", "ModelProject", "ModelRun", "ModelRunError", "ModelRunner", "ProjectError",
           "default_project", "default_variables", "lake_for_models", "load_project"]

_RUNNER_NAMES = {"ModelRun", "ModelRunError", "ModelRunner", "default_variables"}


def __getattr__(name: str):
    # The runner brings in pyspark: loaded on first use, so that a command which only reads the
    # lake (`offsets-platform groups`) starts without it.
    if name in _RUNNER_NAMES:
        from offsets_platform.models import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
