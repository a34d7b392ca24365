"""Build `__consumer_offsets` keys and values byte for byte as Kafka writes them.

The inverse of the decoders, for every record type and value version they read and for the
consumer protocol payloads. Used by the traffic generator, the benchmark and the tests.
Non-flexible versions: int16-length strings, int32-length bytes and arrays, -1 for null.
Flexible versions: unsigned varint of length + 1 (0 for null) and a tagged-field section at the
end of every struct. ``tagged_fields`` arguments (tag -> raw bytes) let callers add fields this
code does not know, as a newer broker would.

Wire primitives live in ``encode_wire``, the classic records and consumer protocol payloads in
``encode_classic``, the KIP-848 records in ``encode_kip848``, the share and streams group records
in ``encode_share_group`` and ``encode_streams_group``; every name is importable from here.
"""

from __future__ import annotations

from . import encode_classic, encode_kip848, encode_share_group, encode_streams_group, encode_wire
from .encode_classic import *  # noqa: F403  (each submodule's __all__ is its public part)
from .encode_kip848 import *  # noqa: F403
from .encode_share_group import *  # noqa: F403
from .encode_streams_group import *  # noqa: F403
from .encode_wire import *  # noqa: F403

__all__ = [*encode_wire.__all__, *encode_classic.__all__, *encode_kip848.__all__, *encode_share_group.__all__,
           *encode_streams_group.__all__]
