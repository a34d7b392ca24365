"""Ingest: `__consumer_offsets` into the bronze Delta tables."""
