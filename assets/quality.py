"""Asset checks: each model's and source table's declared tests, run by Great Expectations.

One check named `expectations` per table that declares tests. It is blocking when any test has
severity `error`, so a failed error-severity test stops the table's downstream models in the same
run; warn-only tables never block.
"""

# No `from __future__ import annotations` here: Dagster inspects the resource annotations.
from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, AssetChecksDefinition, asset_check

from assets.resources import LakeResource, SparkResource
from offsets_platform.lake import TableSpec
from offsets_platform.models.project import ModelProject
from offsets_platform.quality import CheckSpec, SuiteResult, specs_for_model, specs_for_source, validate

CHECK_NAME = "expectations"


def expectation_checks(project: ModelProject) -> list[AssetChecksDefinition]:
    """One `expectations` check per model and source table with tests; bad tests raise here."""
    tables = [(model.name, specs_for_model(model), {model.name: model.table_spec()}) for model in project.models]
    tables += [(source.name, specs_for_source(source), {}) for source in project.sources.values()]
    return [_table_check(name, specs, model_tables) for name, specs, model_tables in tables if specs]


def _table_check(table: str, specs: list[CheckSpec], model_tables: dict[str, TableSpec]) -> AssetChecksDefinition:
    # A closure per table: each check has its own function, name and specs. A model's check
    # carries its table's spec and hands it to the lake, so it reads the model of the project it
    # was made from (the run's lake knows the shipped project's tables).
    @asset_check(
        asset=table,
        name=CHECK_NAME,
        blocking=any(spec.is_error for spec in specs),
        description="Great Expectations: " + "; ".join(f"{s.description} ({s.severity})" for s in specs),
    )
    def _check(context: AssetCheckExecutionContext, lake: LakeResource, spark: SparkResource) -> AssetCheckResult:
        the_lake = lake.lake().with_model_tables(model_tables)
        result = validate(the_lake.spark_read(spark.session(), table), table, specs)
        context.log.info(result.summary())
        return check_result(result)

    return _check


def check_result(result: SuiteResult) -> AssetCheckResult:
    """The Dagster result of one suite run: failed if any test failed, ERROR if an error did."""
    metadata = {"rows_checked": result.rows_checked}
    for outcome in result.outcomes:
        key = f"[{outcome.severity}] {outcome.description}"
        if outcome.error:
            metadata[key] = f"could not be evaluated: {outcome.error}"
        elif outcome.spec.test == "row_count":
            metadata[key] = outcome.observed_value
        else:
            metadata[key] = outcome.unexpected_count
    return AssetCheckResult(
        passed=result.passed,
        severity=AssetCheckSeverity.ERROR if result.failed_errors else AssetCheckSeverity.WARN,
        description=result.summary(),
        metadata=metadata,
    )
