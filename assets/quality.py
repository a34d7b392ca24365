"""Asset checks: each table's declared tests, run by Great Expectations.

One check named `expectations` per table that declares tests. It is blocking when any test has
severity `error`, so a failed error-severity test stops what reads the table in the same run;
warn-only tables never block. The model tables' checks run in the models' own step, on each table
as soon as it is written (assets/models.py); the source tables' checks are their own steps here.
"""

# No `from __future__ import annotations` here: Dagster inspects the resource annotations.
from typing import Optional

from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, AssetChecksDefinition, asset_check

from offsets_platform_dagster.resources import LakeResource, SparkResource
from offsets_platform.models.project import ModelProject
from offsets_platform.quality import CheckSpec, SuiteResult, specs_for_source, validate_table

CHECK_NAME = "expectations"


def expectation_checks(project: ModelProject) -> list[AssetChecksDefinition]:
    """One `expectations` check per source table with tests; bad tests raise here."""
    tables = [(source.name, specs_for_source(source)) for source in project.sources.values()]
    return [_table_check(name, specs) for name, specs in tables if specs]


def suite_description(specs: list[CheckSpec]) -> str:
    return "Great Expectations: " + "; ".join(f"{s.description} ({s.severity})" for s in specs)


def _table_check(table: str, specs: list[CheckSpec]) -> AssetChecksDefinition:
    # A closure per table: each check has its own function, name and specs.
    @asset_check(asset=table, name=CHECK_NAME, blocking=any(spec.is_error for spec in specs),
                 description=suite_description(specs))
    def _check(context: AssetCheckExecutionContext, lake: LakeResource, spark: SparkResource) -> AssetCheckResult:
        result = validate_table(lake.lake(), spark.session, table, specs)
        context.log.info(result.summary())
        return check_result(result)

    return _check


def check_result(result: SuiteResult, asset_key: Optional[str] = None) -> AssetCheckResult:
    """The Dagster result of one suite run: failed if any test failed, ERROR if an error did.
    `asset_key` names the table where one step checks several (the models' step)."""
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
        asset_key=asset_key,
        check_name=CHECK_NAME if asset_key else None,
        passed=result.passed,
        severity=AssetCheckSeverity.ERROR if result.failed_errors else AssetCheckSeverity.WARN,
        description=result.summary(),
        metadata=metadata,
    )
