"""Dagster definitions for offsets_platform: thin assets over the library."""
