"""Build `__consumer_offsets` keys and values byte for byte as Kafka writes them.

The inverse of the decoders, for every record type and value version they read and for the
consumer protocol payloads. Used by the traffic generator, the benchmark and the tests.
Non-flexible versions: int16-length strings, int32-length bytes and arrays, -1 for null.
Flexible versions: unsigned varint of length + 1 (0 for null) and a tagged-field section at the
end of every struct. ``tagged_fields`` arguments (tag -> raw bytes) let callers add fields this
code does not know, as a newer broker would.

Wire primitives live in ``encode_wire``, the classic records and consumer protocol payloads in
``encode_classic``, the KIP-848 records in ``encode_kip848``; every name is importable from here.
"""

from __future__ import annotations

from .encode_classic import (consumer_assignment, consumer_subscription, group_metadata_key, group_metadata_value,
                             offset_commit_key, offset_commit_value)
from .encode_kip848 import (consumer_group_current_member_assignment_key,
                            consumer_group_current_member_assignment_value, consumer_group_key,
                            consumer_group_member_metadata_key, consumer_group_member_metadata_value,
                            consumer_group_metadata_key, consumer_group_metadata_value,
                            consumer_group_partition_metadata_key, consumer_group_partition_metadata_value,
                            consumer_group_target_assignment_member_key, consumer_group_target_assignment_member_value,
                            consumer_group_target_assignment_metadata_key,
                            consumer_group_target_assignment_metadata_value)
from .encode_wire import array, bytes_field, int8, int16, int32, int64, string, tagged_fields, uuid_bytes, uvarint

__all__ = [
    # wire primitives
    "array", "bytes_field", "int8", "int16", "int32", "int64", "string", "tagged_fields", "uuid_bytes", "uvarint",
    # classic records and consumer protocol payloads
    "consumer_assignment", "consumer_subscription", "group_metadata_key", "group_metadata_value",
    "offset_commit_key", "offset_commit_value",
    # KIP-848 records
    "consumer_group_current_member_assignment_key", "consumer_group_current_member_assignment_value",
    "consumer_group_key", "consumer_group_member_metadata_key", "consumer_group_member_metadata_value",
    "consumer_group_metadata_key", "consumer_group_metadata_value", "consumer_group_partition_metadata_key",
    "consumer_group_partition_metadata_value", "consumer_group_target_assignment_member_key",
    "consumer_group_target_assignment_member_value", "consumer_group_target_assignment_metadata_key",
    "consumer_group_target_assignment_metadata_value",
]
