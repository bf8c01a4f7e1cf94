"""Putting a throttle into a response (KIP-219): ``throttle_time_ms = max(broker's, ours)``.

Most responses carry ``throttle_time_ms`` as their first body field, so it is patched in place at
a fixed offset. Produce keeps it after the ``responses`` array: the layout walker finds it and it
is patched in place too (re-encoding would drop tagged fields the codec does not know). Versions
with no field (pre-KIP-219) are left alone: the connection is still muted, which is what holds
clients.
"""

from __future__ import annotations

import struct

from kconfigs_enforcement.gateway import codec, layout
from kconfigs_enforcement.gateway.headers import response_body_offset
from kconfigs_enforcement.gateway.versions import PRODUCE

_INT32 = struct.Struct(">i")
_FIRST_PRODUCE_THROTTLE_VERSION = 1


def patch_throttle_time(api_key: int, version: int, frame: bytes | memoryview, throttle_ms: int) -> bytes | memoryview:
    """The response frame with ``throttle_time_ms`` raised to at least ``throttle_ms``.

    Returns ``frame`` unchanged when the version has no such field.
    """
    if throttle_ms <= 0:
        return frame
    if codec.throttle_time_is_first_field(api_key, version):
        offset = response_body_offset(frame, bool(codec.response_header_flexible(api_key, version)))
    elif api_key == PRODUCE and version >= _FIRST_PRODUCE_THROTTLE_VERSION:
        offset = layout.produce_positions(frame, version)[0]
    else:
        return frame
    if offset + 4 > len(frame):
        return frame
    current = _INT32.unpack_from(frame, offset)[0]
    if current >= throttle_ms:
        return frame
    patched = bytearray(frame)
    _INT32.pack_into(patched, offset, min(throttle_ms, 2**31 - 1))
    return bytes(patched)


def response_throttle_time(api_key: int, version: int, frame: bytes) -> int | None:
    """The ``throttle_time_ms`` in a response, when it sits at the fixed first-field offset."""
    if not codec.throttle_time_is_first_field(api_key, version):
        return None
    offset = response_body_offset(frame, bool(codec.response_header_flexible(api_key, version)))
    return _INT32.unpack_from(frame, offset)[0] if offset + 4 <= len(frame) else None
