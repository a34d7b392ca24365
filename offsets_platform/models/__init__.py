"""The dbt-like SQL models: project loading, rendering, and the runner."""

from offsets_platform.models.project import (Model, ModelProject, ProjectError, default_project, lake_for_models,
                                             load_project)
from offsets_platform.models.runner import ModelRun, ModelRunError, ModelRunner, default_variables

__all__ = ["Model", "ModelProject", "ModelRun", "ModelRunError", "ModelRunner", "ProjectError",
           "default_project", "default_variables", "lake_for_models", "load_project"]
