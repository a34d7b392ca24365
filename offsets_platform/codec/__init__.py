"""Decoders and encoders for the records of Kafka's `__consumer_offsets` topic.

``decode_record`` decodes one record (offset commits, classic group metadata with its consumer
protocol payloads, KIP-848 consumer group, share group and streams group records: every type
Kafka 4.3's group coordinator writes); ``decode_batch`` decodes an Arrow batch at
ingest speed into the tables of ``schemas``; ``encode`` builds the same bytes Kafka writes.
Malformed bytes raise ``DecodeError`` naming the field where decoding failed. No IO here.
"""

from .batch import DecodedBatch, decode_batch
from .reader import DecodeError
from .records import RECORD_TYPES, decode_key, decode_record

__all__ = ["DecodeError", "DecodedBatch", "RECORD_TYPES", "decode_batch", "decode_key", "decode_record"]
