"""Building blocks shared by the decoders of the flexible group-coordinator values.

Every KIP-848, share-group (KIP-932) and streams-group (KIP-1071) value is flexible from
version 0: compact strings and arrays, and a tagged-field section closing every struct. The
pieces several of those schemas repeat live here, so each record module reads as its schema.
"""

from __future__ import annotations

from .reader import ByteReader

# Smallest encodings, used to refuse array counts the remaining bytes cannot hold:
# a UUID (16) + an empty compact array (1) + an empty tagged section (1).
_TOPIC_ID_PARTITIONS_MIN = 18


def text(reader: ByteReader, field: str) -> str:
    """A compact string the schema does not declare nullable (Kafka refuses null there)."""
    return reader.string(field, flexible=True, nullable=False)


def texts(reader: ByteReader, field: str) -> list[str]:
    """A compact ``[]string``: neither the array nor its elements may be null."""
    return reader.string_array(field, flexible=True, nullable_items=False)


def nullable_int32_array(reader: ByteReader, field: str) -> list[int] | None:
    """A compact ``[]int32`` the schema declares nullable (e.g. a tagged AssignmentEpochs)."""
    count = reader.nullable_array_length(field, flexible=True, min_item_size=4)
    if count is None:
        return None
    return [reader.int32(f"{field}[{i}]") for i in range(count)]


def tagged_int64(reader: ByteReader, field: str) -> int:
    """Handler for a tagged int64 (``ByteReader.tagged_fields``)."""
    return reader.int64(field)


def tagged_int32(reader: ByteReader, field: str) -> int:
    """Handler for a tagged int32 (``ByteReader.tagged_fields``)."""
    return reader.int32(field)


def topic_id_partitions(reader: ByteReader, field: str, assignment_epochs: bool = False) -> list[dict]:
    """A ``[]{TopicId uuid, Partitions []int32}`` array.

    Args:
        reader: Positioned at the array's length.
        field: Field name for errors.
        assignment_epochs: True where the struct declares the tagged, nullable
            AssignmentEpochs (tag 0): ConsumerGroupCurrentMemberAssignmentValue in 4.3.

    Returns:
        [{"topic_id", "partitions"}] (+ "assignment_epochs", None when absent).
    """
    count = reader.array_length(field, flexible=True, min_item_size=_TOPIC_ID_PARTITIONS_MIN)
    items = []
    for i in range(count):
        path = f"{field}[{i}]"
        item = {
            "topic_id": reader.uuid(f"{path}.topic_id"),
            "partitions": reader.int32_array(f"{path}.partitions", flexible=True),
        }
        if assignment_epochs:
            tagged = reader.tagged_fields(path, {0: ("assignment_epochs", nullable_int32_array)})
            item["assignment_epochs"] = tagged.get("assignment_epochs")
        else:
            reader.tagged_fields(path)
        items.append(item)
    return items
