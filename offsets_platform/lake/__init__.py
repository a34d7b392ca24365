"""The lake: Delta tables (registry, reads and writes) and the Spark session."""

from offsets_platform.lake.delta import Lake, MissingTable, NoLake, OutdatedTable
from offsets_platform.lake.tables import TABLES, TableSpec, table_spec

__all__ = ["Lake", "MissingTable", "NoLake", "OutdatedTable", "TABLES", "TableSpec", "table_spec"]
