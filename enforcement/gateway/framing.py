"""Length-prefixed Kafka frames over asyncio streams.

The size limit is checked from the 4-byte prefix alone, before anything is allocated for the
body, so a hostile or confused peer (e.g. a TLS ClientHello read as a length: 0x16030100 =
369 098 752 bytes) costs four bytes of memory.
"""

from __future__ import annotations

import asyncio
import struct

from kconfigs_enforcement.gateway.headers import MalformedFrame

_INT32 = struct.Struct(">i")
DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes
DEFAULT_MAX_PREAUTH_FRAME_BYTES = 512 * 1024  # Kafka's sasl.server.max.receive.size
#: a request header is api_key+api_version+correlation_id+client_id length = 10 bytes
MIN_REQUEST_FRAME_BYTES = 10
MIN_RESPONSE_FRAME_BYTES = 4


class FrameTooLarge(MalformedFrame):
    """The length prefix announces more bytes than the limit allows."""


def check_frame_size(size: int, min_bytes: int, max_bytes: int) -> None:
    """Validate a length prefix. :raises MalformedFrame, FrameTooLarge:"""
    if size < min_bytes:
        raise MalformedFrame(f"frame length {size} is below the minimum of {min_bytes} bytes")
    if size > max_bytes:
        hint = " (a TLS handshake sent to a plaintext port?)" if size == 0x16030100 or size >> 24 == 0x16 else ""
        raise FrameTooLarge(f"frame length {size} exceeds the limit of {max_bytes} bytes{hint}")


async def read_size(reader: asyncio.StreamReader) -> int | None:
    """Read the 4-byte length prefix; ``None`` on a clean EOF before any byte.

    :raises asyncio.IncompleteReadError: on EOF inside the prefix.
    """
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as err:
        if not err.partial:
            return None
        raise
    return _INT32.unpack(head)[0]


async def read_frame(reader: asyncio.StreamReader, min_bytes: int, max_bytes: int) -> bytes | None:
    """Read one frame body (without its prefix); ``None`` on a clean EOF between frames.

    :raises MalformedFrame, FrameTooLarge, asyncio.IncompleteReadError:
    """
    size = await read_size(reader)
    if size is None:
        return None
    check_frame_size(size, min_bytes, max_bytes)
    return await reader.readexactly(size)


def frame_bytes(body: bytes | bytearray | memoryview) -> bytes:
    """Prefix ``body`` with its int32 length."""
    return _INT32.pack(len(body)) + bytes(body)


def write_frame(writer: asyncio.StreamWriter, body: bytes) -> None:
    """Queue a frame without concatenating prefix and body (a 1 MiB produce is not copied)."""
    writer.writelines((_INT32.pack(len(body)), body))
