"""Vectorised decoding of classic group metadata records (key type 2, values v0-v3, tombstones).

Values are read in lockstep by ``Cursor``, arrays (members, then the topics and partitions of
their consumer protocol payloads) item by item across all rows. Rows left out (v4, malformed,
not UTF-8, more than ``MAX_LOCKSTEP_ITEMS`` items in an array) are for the scalar decoder.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._binary import Binary, int_array, offsets, scatter
from ._cursor import Cursor, fail_owners
from .batch_consumer_protocol import decode_assignments, decode_subscriptions
from .schemas import GROUP_MEMBER_SCHEMA, GROUP_METADATA_SCHEMA, TIMESTAMP

_MEMBER_STRINGS = (("member_id", 0), ("group_instance_id", 3), ("client_id", 6), ("client_host", 9))


def _member(cur: Cursor, version: np.ndarray) -> tuple:
    # member_id, group_instance_id (v3+), client_id, client_host: (start, length, null) each;
    # rebalance_timeout (v1+), session_timeout; subscription, assignment bytes.
    return (*cur.sized(2), *cur.sized(2, version >= 3), *cur.sized(2), *cur.sized(2),
            cur.int(4, version >= 1), cur.int(4), *cur.sized(4), *cur.sized(4))


def decode_group_metadata(keys: Binary, values: Binary, rows: np.ndarray) -> tuple[pa.Table, pa.Table, np.ndarray]:
    """Decode the classic group metadata records of ``rows`` that the vector path can vouch for.

    Returns:
        (group table, member table, mask of the rows decoded here among ``rows``).
    """
    key = Cursor(keys, keys.starts[rows] + 2, keys.ends[rows].copy())
    group, bad_group = keys.strings(key.sized(2))
    done = key.at_end() & ~bad_group
    tombstone = ~values.valid[rows]

    cur = Cursor(values, values.starts[rows], values.ends[rows].copy(), ok=~tombstone)
    version = cur.int(2)
    cur.ok &= (version >= 0) & (version <= 3)
    protocol_type, generation, protocol, leader = cur.sized(2), cur.int(4), cur.sized(2), cur.sized(2)
    timestamp = cur.int(8, version >= 2)
    member_count = cur.count()
    owner, m = cur.items(member_count, lambda c, r: _member(c, version[r]))
    done &= tombstone | cur.at_end()

    strings = {}
    for name, (start, length, null) in (("protocol_type", protocol_type), ("protocol", protocol), ("leader", leader)):
        strings[name], bad = values.strings((start, length, null | tombstone))
        done &= ~bad
    for name, at in _MEMBER_STRINGS:
        strings[name], bad = values.strings(m[at:at + 3])
        fail_owners(done, owner, ~bad)

    consumer = pc.fill_null(pc.equal(strings["protocol_type"], "consumer"), False).to_numpy(zero_copy_only=False)
    subscription, assignment = m[14:17], m[17:20]
    member_columns = {}
    for decode, field, wanted in (
            (decode_subscriptions, subscription, consumer[owner]),
            (decode_assignments, assignment, consumer[owner] & (assignment[1] > 0) & ~assignment[2])):
        picked = np.flatnonzero(wanted)
        columns, ok = decode(values, tuple(a[picked] for a in field))
        fail_owners(done, owner[picked], ok)
        member_columns.update({name: scatter(arr, picked, len(owner)) for name, arr in columns.items()})

    groups = pa.table({
        "row": pa.array(rows, pa.int64()),
        "key_version": pa.array(np.full(len(rows), 2), pa.int16()),
        "group": group,
        "tombstone": pa.array(tombstone),
        "value_version": int_array(version, pa.int16(), tombstone),
        "protocol_type": strings["protocol_type"],
        "generation": int_array(generation, pa.int32(), tombstone),
        "protocol": strings["protocol"],
        "leader": strings["leader"],
        "current_state_timestamp": int_array(timestamp, TIMESTAMP, tombstone | (version < 2) | (timestamp == -1)),
        "member_count": int_array(member_count, pa.int32(), tombstone),
    }, schema=GROUP_METADATA_SCHEMA)

    first = offsets(member_count)
    members = pa.table({
        "row": pa.array(rows[owner], pa.int64()),
        "group": group.take(pa.array(owner)),
        "member_index": pa.array(np.arange(len(owner)) - first[owner], pa.int32()),
        **{name: strings[name] for name, _ in _MEMBER_STRINGS},
        "rebalance_timeout": int_array(m[12], pa.int32(), version[owner] < 1),
        "session_timeout": pa.array(m[13], pa.int32()),
        **member_columns,
        "subscription_bytes": values.bytes(subscription),
        "assignment_bytes": values.bytes(assignment),
        # a payload this path cannot decode sends its record to the scalar decoder, which says why
        "subscription_error": pa.nulls(len(owner), pa.string()),
        "assignment_error": pa.nulls(len(owner), pa.string()),
    }, schema=GROUP_MEMBER_SCHEMA)
    if not done.all():
        groups, members = groups.filter(pa.array(done)), members.filter(pa.array(done[owner]))
    return groups, members, done
