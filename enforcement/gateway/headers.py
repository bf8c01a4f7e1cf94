"""The request header prefix of a frame the control plane answers (the quota admin APIs), hand
parsed: request headers v1 and v2 share the prefix ``api_key:int16 api_version:int16
correlation_id:int32 client_id:nullable int16-length string`` (v2 only appends tagged fields), so
no schema or flexible-version flag is needed to read it.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

_INT16 = struct.Struct(">h")
_PREFIX = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_MIN_REQUEST_HEADER_BYTES = _PREFIX.size + 2  # + client_id length


class MalformedFrame(ValueError):
    """A frame whose bytes do not form a valid Kafka header (the connection is closed)."""


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
