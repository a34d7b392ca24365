"""The models' SQL project, installed as `offsets_platform.sql_project` (setup.py maps this folder to
that name): a built wheel carries it, and `offsets_platform.models.project` finds it through the
import system whether the package runs from a checkout or from an installed wheel."""
