"""Hand-parsed Kafka request/response prefixes (no library).

Why hand-written: every frame passes through here, so this must be cheap and must not depend on
knowing a schema. Request headers v1 and v2 share the prefix ``api_key:int16 api_version:int16
correlation_id:int32 client_id:nullable int16-length string`` (v2 only appends tagged fields), and
every response header starts with ``correlation_id:int32``. kafka-python's header classes decode
through BytesIO and need the flexible-version flag first, which we do not want on the hot path.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PREFIX = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_MIN_REQUEST_HEADER_BYTES = _PREFIX.size + 2  # + client_id length


class MalformedFrame(ValueError):
    """A frame whose bytes do not form a valid Kafka header (the connection is closed)."""


class ProtocolViolation(Exception):
    """The peer broke the protocol in a way that ends this connection (logged, not raised on)."""


class RequestPrefix(NamedTuple):  # a tuple: built for every request, cheaper than a frozen dataclass
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    #: offset of the first byte after client_id (request header v1 ends here; v2 has tags next)
    client_id_end: int


def parse_request_prefix(frame: bytes | memoryview) -> RequestPrefix:
    """Parse the header prefix of a request frame (the bytes after the 4-byte length).

    :raises MalformedFrame: if the frame is shorter than the header or client_id overruns it.
    """
    if len(frame) < _MIN_REQUEST_HEADER_BYTES:
        raise MalformedFrame(f"request of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _PREFIX.unpack_from(frame, 0)
    (length,) = _INT16.unpack_from(frame, _PREFIX.size)
    start = _MIN_REQUEST_HEADER_BYTES
    if length < 0:
        return RequestPrefix(api_key, api_version, correlation_id, None, start)
    end = start + length
    if end > len(frame):
        raise MalformedFrame(f"client_id of {length} bytes overruns a {len(frame)}-byte request")
    client_id = bytes(frame[start:end]).decode("utf-8", errors="replace")
    return RequestPrefix(api_key, api_version, correlation_id, client_id, end)


def parse_response_correlation_id(frame: bytes | memoryview) -> int:
    """The correlation id: the first 4 bytes of response headers v0 and v1.

    :raises MalformedFrame: for a frame shorter than 4 bytes.
    """
    if len(frame) < 4:
        raise MalformedFrame(f"response of {len(frame)} bytes has no correlation id")
    return _INT32.unpack_from(frame, 0)[0]


def read_uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 varint (Kafka's UNSIGNED_VARINT) at ``pos`` -> (value, next position).

    :raises MalformedFrame: if the varint runs past the buffer or is longer than 5 bytes.
    """
    value = 0
    for shift in range(0, 35, 7):
        if pos >= len(buf):
            raise MalformedFrame("varint runs past the end of the frame")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
    raise MalformedFrame("varint longer than 5 bytes")


def skip_tagged_fields(buf: bytes | memoryview, pos: int) -> int:
    """Skip a tagged-field section (count, then tag/size/bytes each) -> position after it.

    :raises MalformedFrame: if a field overruns the buffer.
    """
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise MalformedFrame("tagged field overruns the frame")
    return pos


def request_body_offset(frame: bytes | memoryview, prefix: RequestPrefix, flexible: bool) -> int:
    """Offset of the request body: header v2 (flexible versions) adds tagged fields after client_id."""
    return skip_tagged_fields(frame, prefix.client_id_end) if flexible else prefix.client_id_end


def response_body_offset(frame: bytes | memoryview, flexible_header: bool) -> int:
    """Offset of the response body: header v1 adds tagged fields after the correlation id."""
    return skip_tagged_fields(frame, 4) if flexible_header else 4


PRODUCE_API_KEY = 0
_FIRST_COMPACT_PRODUCE_VERSION = 9
_FIRST_TRANSACTIONAL_PRODUCE_VERSION = 3


def produce_acks(frame: bytes | memoryview, prefix: RequestPrefix) -> int:
    """The ``acks`` of a Produce request, to know whether a response will come (acks=0: none).

    v0-2: first body field. v3-8: after a non-compact nullable transactional_id.
    v9+: after the header's tagged fields and a compact nullable transactional_id.
    :raises MalformedFrame: if the body is too short.
    """
    version = prefix.api_version
    flexible = version >= _FIRST_COMPACT_PRODUCE_VERSION
    pos = request_body_offset(frame, prefix, flexible)
    if version >= _FIRST_COMPACT_PRODUCE_VERSION:
        length_plus_one, pos = read_uvarint(frame, pos)
        pos += max(length_plus_one - 1, 0)
    elif version >= _FIRST_TRANSACTIONAL_PRODUCE_VERSION:
        if pos + 2 > len(frame):
            raise MalformedFrame("produce request truncated before transactional_id")
        (length,) = _INT16.unpack_from(frame, pos)
        pos += 2 + max(length, 0)
    if pos + 2 > len(frame):
        raise MalformedFrame("produce request truncated before acks")
    return _INT16.unpack_from(frame, pos)[0]
