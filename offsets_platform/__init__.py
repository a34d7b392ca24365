"""offsets_platform: Kafka consumer-group state from `__consumer_offsets` into Delta tables.

The library knows nothing of Dagster: `assets/` wraps it. Sub-packages, one concern each:
`codec` (record formats), `kafka` (broker access), `lake` (Delta tables, Spark session),
`ingest` (log into bronze), `workload` (realistic coordinator traffic).
"""

__version__ = "0.2.0"
