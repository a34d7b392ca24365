"""Vectorised decoding of the consumer protocol payloads of classic group members.

The lockstep counterpart of ``consumer_protocol``: subscriptions (v0-v3, every field their
version has) and assignments, one column per field, one row per payload. A payload the scalar
decoder would read differently (cut short after the v0 prefix, a topic assigned twice) is
left out of the returned mask, so that its member's record takes the scalar path.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._binary import Binary, int_array, lists
from ._cursor import Cursor, fail_owners
from .schemas import TOPIC_PARTITIONS


def decode_subscriptions(values: Binary, field: tuple) -> tuple[dict, np.ndarray]:
    """Decode consumer protocol subscriptions (every field their version has, as the broker would).

    Args:
        values: The buffer the payloads are in.
        field: The payloads as (start, length, null).

    Returns:
        (columns, one per subscription; mask of subscriptions decoded).
    """
    start, length, null = field
    cur = Cursor(values, start, start + length, ok=~null)
    version = cur.int(2)
    cur.ok &= version >= 0
    topic_count = cur.count()
    topic_owners, topic_fields = cur.items(topic_count, lambda c, rows: c.sized(2))
    user_data = values.bytes(cur.sized(4))
    owned_count = cur.count(version >= 1)
    owners, owned = cur.items(owned_count, _topic_partitions)
    generation = cur.int(4, version >= 2)
    rack, bad_rack = values.strings(cur.sized(2, version >= 3))
    topics, bad_topics = values.strings(topic_fields)
    owned_lists, bad_owned, _ = _topic_partition_lists(values, owned_count, owned, version < 1)
    ok = cur.ok & ~bad_rack
    fail_owners(ok, topic_owners, ~bad_topics)
    fail_owners(ok, owners, ~bad_owned)
    return {
        "subscription_version": pa.array(version, pa.int16()),
        "subscribed_topics": lists(topic_count, topics),
        "subscription_user_data": user_data,
        "owned_partitions": owned_lists,
        "subscription_generation_id": int_array(generation, pa.int32(), version < 2),
        "rack_id": rack,
    }, ok


def decode_assignments(values: Binary, field: tuple) -> tuple[dict, np.ndarray]:
    """Decode consumer protocol assignments (non-null, non-empty); like the scalar decoder, refuse repeated topics."""
    start, length, _ = field
    cur = Cursor(values, start, start + length)
    version = cur.int(2)
    cur.ok &= version >= 0
    count = cur.count()
    owners, items = cur.items(count, _topic_partitions)
    user_data = values.bytes(cur.sized(4))
    assigned, bad, topics = _topic_partition_lists(values, count, items, np.zeros(len(start), bool))
    ok = cur.ok
    fail_owners(ok, owners, ~bad)
    # The scalar decoder merges a topic listed twice into one entry; leave that rare case to it.
    codes = pc.dictionary_encode(topics).indices.fill_null(-1).to_numpy().astype(np.int64)
    pairs = np.sort(owners * (int(codes.max(initial=0)) + 2) + codes + 1)
    repeated = pairs[1:][pairs[1:] == pairs[:-1]] // (int(codes.max(initial=0)) + 2)
    ok[repeated] = False
    return {
        "assignment_version": pa.array(version, pa.int16()),
        "assigned_partitions": assigned,
        "assignment_user_data": user_data,
    }, ok


def _topic_partitions(cur: Cursor, rows: np.ndarray) -> tuple:
    """One {topic, partitions []int32} item: (topic start, length, null, partitions start, count)."""
    return (*cur.sized(2), *cur.int32_array())


def _topic_partition_lists(col: Binary, owners_count: np.ndarray, items: tuple, null: np.ndarray):
    """list<struct<topic, partitions>> per owner from parsed ``_topic_partitions`` items.

    Returns:
        (list array, mask of items whose topic is not UTF-8, topic strings).
    """
    topics, bad = col.strings(items[:3])
    partitions = lists(items[4], pa.array(col.int32s(items[3], items[4]), pa.int32()))
    structs = pa.StructArray.from_arrays([topics, partitions], fields=list(TOPIC_PARTITIONS.value_type))
    return lists(owners_count, structs, null), bad, topics
