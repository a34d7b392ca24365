"""A small bounds-checked reader for Kafka's binary message formats.

Every read names the field it is reading, so a failure says where decoding stopped, e.g.
``offset commit value v3: field 'commit_timestamp' needs 8 bytes at position 16, only 3 left``.
Lengths are checked against the bytes actually left before anything is allocated, so hostile
input can never cause a huge allocation or a long loop.
"""

from __future__ import annotations

import struct
import uuid

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")

# Kafka refuses strings longer than a signed 16-bit length, flexible versions included.
MAX_STRING_LENGTH = 0x7FFF
_MAX_VARINT_BYTES = 5


class DecodeError(ValueError):
    """Bytes that do not match the schema; the message names the field where decoding failed."""


class ByteReader:
    """Reads big-endian fields from a byte string, refusing to run past its end.

    Args:
        buf: The bytes to read.
        context: Prefix for error messages, e.g. "offset commit value v3".
        pos: Where to start reading.
        end: Where the readable region ends (default: the end of ``buf``).
    """

    __slots__ = ("buf", "pos", "end", "context")

    def __init__(self, buf: bytes, context: str, pos: int = 0, end: int | None = None):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        self.context = context

    @property
    def remaining(self) -> int:
        """Bytes left before the end of the readable region."""
        return self.end - self.pos

    def error(self, field: str, problem: str) -> DecodeError:
        """Build a DecodeError naming ``field``.

        Args:
            field: The field being decoded.
            problem: What went wrong, phrased to follow "field 'x'".

        Returns:
            The error (the caller raises it).
        """
        return DecodeError(f"{self.context}: field '{field}' {problem}")

    def _need(self, field: str, n: int) -> int:
        pos = self.pos
        if n > self.end - pos:
            raise self.error(field, f"needs {n} bytes at position {pos}, only {self.end - pos} left")
        self.pos = pos + n
        return pos

    # -- fixed-width integers -------------------------------------------------------------

    def int8(self, field: str) -> int:
        """Read a signed 8-bit integer."""
        return _INT8.unpack_from(self.buf, self._need(field, 1))[0]

    def int16(self, field: str) -> int:
        """Read a big-endian signed 16-bit integer."""
        return _INT16.unpack_from(self.buf, self._need(field, 2))[0]

    def uint16(self, field: str) -> int:
        """Read a big-endian unsigned 16-bit integer (Kafka's ``uint16``, e.g. a port)."""
        return _UINT16.unpack_from(self.buf, self._need(field, 2))[0]

    def int32(self, field: str) -> int:
        """Read a big-endian signed 32-bit integer."""
        return _INT32.unpack_from(self.buf, self._need(field, 4))[0]

    def int64(self, field: str) -> int:
        """Read a big-endian signed 64-bit integer."""
        return _INT64.unpack_from(self.buf, self._need(field, 8))[0]

    def uuid(self, field: str) -> str:
        """Read a 16-byte UUID.

        Returns:
            The canonical 8-4-4-4-12 hex form.
        """
        pos = self._need(field, 16)
        return str(uuid.UUID(bytes=bytes(self.buf[pos:pos + 16])))

    def uvarint(self, field: str) -> int:
        """Read an unsigned varint (7 bits a byte, low groups first, at most 5 bytes)."""
        buf, pos, end = self.buf, self.pos, self.end
        start, result, shift = pos, 0, 0
        for _ in range(_MAX_VARINT_BYTES):
            if pos >= end:
                raise self.error(field, f"has a varint cut off at position {pos} (started at {start})")
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                self.pos = pos
                return result
            shift += 7
        raise self.error(field, f"has a varint longer than {_MAX_VARINT_BYTES} bytes at position {start}")

    # -- lengths, strings, bytes ----------------------------------------------------------

    def _length(self, field: str, flexible: bool, wide: bool) -> int:
        """Read a length prefix: -1 means null; any other negative value is refused."""
        start = self.pos
        if flexible:
            n = self.uvarint(field) - 1
        elif wide:
            n = self.int32(field)
        else:
            n = self.int16(field)
        if n < -1:
            raise self.error(field, f"has invalid length {n} at position {start}")
        return n

    def string(self, field: str, flexible: bool = False, nullable: bool = True) -> str | None:
        """Read a string (int16 length, or compact in flexible versions).

        Args:
            field: Field name for errors.
            flexible: True for the compact (varint length + 1) form.
            nullable: False for a field the schema does not declare nullable: Kafka's
                generated readers refuse null there, so null is an error.

        Returns:
            The string, or None when the length is -1 (null).
        """
        start = self.pos
        n = self._length(field, flexible, wide=False)
        if n < 0:
            if not nullable:
                raise self.error(field, f"is null at position {start}, but the schema does not allow null")
            return None
        if n > MAX_STRING_LENGTH:
            raise self.error(field, f"has length {n}, above Kafka's limit of {MAX_STRING_LENGTH}")
        pos = self._need(field, n)
        try:
            return str(self.buf[pos:pos + n], "utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(field, f"is not valid UTF-8 at position {pos + exc.start}") from None

    def bytes(self, field: str, flexible: bool = False) -> bytes | None:
        """Read a byte string (int32 length, or compact in flexible versions).

        Returns:
            The bytes, or None when the length is -1 (null).
        """
        n = self._length(field, flexible, wide=True)
        if n < 0:
            return None
        pos = self._need(field, n)
        return bytes(self.buf[pos:pos + n])

    # -- arrays ---------------------------------------------------------------------------

    def array_length(self, field: str, flexible: bool = False, min_item_size: int = 1) -> int:
        """Read the length of an array the schema does not declare nullable: null is an error.

        Args:
            field: Field name for errors.
            flexible: True for the compact form.
            min_item_size: Smallest encoded size of one element, used to refuse counts the
                remaining bytes cannot possibly hold.

        Returns:
            The element count.
        """
        start = self.pos
        n = self.nullable_array_length(field, flexible, min_item_size)
        if n is None:
            raise self.error(field, f"is null at position {start}, but the schema does not allow null")
        return n

    def nullable_array_length(self, field: str, flexible: bool = False, min_item_size: int = 1) -> int | None:
        """Read the length of an array the schema declares nullable; None when it is null.

        Arguments as for ``array_length``.
        """
        start = self.pos
        n = self._length(field, flexible, wide=True)
        if n < 0:
            return None
        if n * min_item_size > self.end - self.pos:
            raise self.error(
                field, f"declares {n} elements at position {start}, only {self.end - self.pos} bytes left"
            )
        return n

    def string_array(self, field: str, flexible: bool = False, nullable_items: bool = True) -> list[str | None]:
        """Read an array of strings; ``nullable_items=False`` refuses null elements, as Kafka does for []string."""
        count = self.array_length(field, flexible, min_item_size=1 if flexible else 2)
        return [self.string(f"{field}[{i}]", flexible, nullable_items) for i in range(count)]

    def int32_array(self, field: str, flexible: bool = False) -> list[int]:
        """Read an array of int32."""
        count = self.array_length(field, flexible, min_item_size=4)
        pos = self._need(field, 4 * count)
        return list(struct.unpack_from(f">{count}i", self.buf, pos))

    # -- flexible-version extras ----------------------------------------------------------

    def tagged_fields(self, field: str, handlers: dict | None = None) -> dict:
        """Read a tagged-field section, decoding the tags in ``handlers`` and skipping the rest.

        Args:
            field: Path of the enclosing struct for errors ("" for the top level).
            handlers: Map of tag -> (name, function(reader, field_path) -> value). Each
                function reads from a reader bounded to that tagged field's bytes and must
                consume all of them.

        Returns:
            Map of name -> decoded value for the handled tags that were present.
        """
        prefix = f"{field}." if field else ""
        section = f"{prefix}tagged_fields"
        found = {}
        count = self.uvarint(section)
        if count * 2 > self.end - self.pos:  # a tag and a size take at least one byte each
            raise self.error(section, f"declares {count} tagged fields, only {self.remaining} bytes left")
        for _ in range(count):
            tag = self.uvarint(f"{section}.tag")
            size = self.uvarint(f"{section}[{tag}].size")
            handler = handlers.get(tag) if handlers else None
            start = self._need(prefix + handler[0] if handler else f"{section}[{tag}]", size)
            if handler:
                name, read = handler
                sub = ByteReader(self.buf, self.context, start, start + size)
                found[name] = read(sub, prefix + name)
                sub.expect_end(prefix + name)
        return found

    def expect_end(self, after: str | None = None) -> None:
        """Refuse bytes left over after the last field.

        Args:
            after: Name of the last field read, if known, for the error message.
        """
        if self.pos != self.end:
            extra = self.end - self.pos
            if after:
                raise self.error(after, f"is followed by {extra} unexpected bytes at position {self.pos}")
            raise DecodeError(f"{self.context}: {extra} unexpected bytes after the last field, at position {self.pos}")
