"""Data quality: the project's declared tests, run as Great Expectations suites (on Arrow for
small tables, on Spark for the rest)."""

from offsets_platform.quality.expectations import CheckOutcome, SuiteResult, load_great_expectations, validate
from offsets_platform.quality.specs import (
    ERROR,
    WARN,
    CheckSpec,
    CheckSpecError,
    specs_for_model,
    specs_for_source,
)
from offsets_platform.quality.table_validation import validate_table

__all__ = ["ERROR", "WARN", "CheckOutcome", "CheckSpec", "CheckSpecError", "SuiteResult",
           "load_great_expectations", "specs_for_model", "specs_for_source", "validate", "validate_table"]
