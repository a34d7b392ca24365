"""The lake: Delta tables (registry, reads and writes) and the Spark session."""

from offsets_platform.lake.delta import Lake, MissingTable
from offsets_platform.lake.tables import TABLES, TableSpec, table_spec

__all__ = ["Lake", "MissingTable", "TABLES", "TableSpec", "table_spec"]
