"""The packages and their data files, which pyproject.toml cannot express: two folders keep the top-level places the
project's layout gives them (assets/ for Dagster's deployment, dbt_like_sql/ for the models' SQL)
and are installed under names inside the project's own namespace. The rest of the build's settings
are in pyproject.toml.

The proving ground (simulator, live workload, demo, fault trials) is a contributor's tool and is
left out: `make` puts the checkout on its virtual environment's path instead (Makefile).
"""

from setuptools import find_namespace_packages, find_packages, setup

SQL_PROJECT = "offsets_platform.sql_project"
# the layers' folders of the SQL project (its `_lint_library` serves only sqlfluff)
SQL_LAYERS = [f"{SQL_PROJECT}.{layer}" for layer in find_namespace_packages(where="dbt_like_sql", exclude=["_*"])]

setup(
    packages=[*find_packages(include=["offsets_platform", "offsets_platform.*"]),
              "offsets_platform_dagster", SQL_PROJECT, *SQL_LAYERS],
    package_dir={
        # a name no other project installs, unlike a top-level `assets`
        "offsets_platform_dagster": "assets",
        # the SQL project, shipped inside the package: every refresh reads it
        SQL_PROJECT: "dbt_like_sql",
    },
    package_data={
        # the log4j configurations of the embedded broker and of Kafka's tools
        "offsets_platform.broker": ["*.properties"],
        # the Prometheus alerting rules `offsets-platform metrics --alerting-rules` prints
        "offsets_platform.views.metrics": ["alerting_rules.yml"],
        # the poms of the Java jars `offsets-platform install-jars` fetches
        "offsets_platform.jars": ["*.pom.xml"],
        # the Dagster instance settings `make ui` copies into a new home
        "offsets_platform_dagster": ["*.yaml"],
        # the models' SQL and YAML
        SQL_PROJECT: ["*.yml", "*.md"],
        **{layer: ["*.sql", "*.yml"] for layer in SQL_LAYERS},
    },
)
