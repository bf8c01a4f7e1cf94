"""Length-prefixed Kafka frames over asyncio streams, for the control plane's own connections (the
auth probe); client traffic is framed by the data plane.

The size limit is checked from the 4-byte prefix alone, before anything is allocated for the
body, so a hostile or confused peer costs four bytes of memory.
"""

from __future__ import annotations

import asyncio
import struct

from kconfigs_enforcement.gateway.headers import MalformedFrame

_INT32 = struct.Struct(">i")
MIN_RESPONSE_FRAME_BYTES = 4


def check_frame_size(size: int, min_bytes: int, max_bytes: int) -> None:
    """Validate a length prefix. :raises MalformedFrame:"""
    if size < min_bytes:
        raise MalformedFrame(f"frame length {size} is below the minimum of {min_bytes} bytes")
    if size > max_bytes:
        raise MalformedFrame(f"frame length {size} exceeds the limit of {max_bytes} bytes")


async def read_frame(reader: asyncio.StreamReader, min_bytes: int, max_bytes: int) -> bytes | None:
    """Read one frame body (without its prefix); ``None`` on a clean EOF between frames.

    :raises MalformedFrame, asyncio.IncompleteReadError:
    """
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as err:
        if not err.partial:
            return None
        raise
    size = _INT32.unpack(head)[0]
    check_frame_size(size, min_bytes, max_bytes)
    return await reader.readexactly(size)


def write_frame(writer: asyncio.StreamWriter, body: bytes) -> None:
    """Queue a frame without concatenating prefix and body."""
    writer.writelines((_INT32.pack(len(body)), body))
