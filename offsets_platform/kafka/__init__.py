"""Kafka client adapters: the admin client as snapshots and cleanup use it, the describe API of each
group type, the `__consumer_offsets` reader, open transactions, and errors that name the address."""
