"""Kafka access: the embedded broker, reachability checks, the `__consumer_offsets` reader."""
