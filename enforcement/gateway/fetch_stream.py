"""Relaying a large Fetch v16+ response as it arrives while rewriting its NodeEndpoints.

Why this exists: a Fetch response above QUICK_HEAD_BYTES is streamed (its records spliced socket to
socket), but from v16 its last bytes, the top-level tagged fields, may hold KIP-951 NodeEndpoints
with broker addresses. Records sit in every partition before them, so the response is walked as it
streams (:mod:`layout`): the small structural fields are read from the receive buffer and passed
on, each partition's records are forwarded unread (spliced when large), and only the final tagged
fields are rewritten.

The length prefix leaves first, before the NodeEndpoints are seen, so the rewrite must keep the
frame's length: :func:`~kconfigs_enforcement.gateway.rewrite.prepare_tagged_section_rewrite` pads a shorter
rewrite with an unknown tag, and blanks the field (the client then refreshes its metadata, as with
a pre-KIP-951 broker) when the gateway's addresses do not fit. Fetch responses small enough to be
held whole are rewritten exactly instead (see responses.py).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from kconfigs_enforcement.gateway import layout
from kconfigs_enforcement.gateway.headers import MalformedFrame, read_uvarint
from kconfigs_enforcement.gateway.rewrite import prepare_tagged_section_rewrite

if TYPE_CHECKING:
    from kconfigs_enforcement.gateway.channel import Channel
    from kconfigs_enforcement.gateway.server import BrokerRegistry

#: structural fields up to this size are read into the receive buffer and held; larger skips
#: (records) are forwarded as they arrive
READ_LIMIT_BYTES = 4096
_MAX_UVARINT_BYTES = 5
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


async def relay_fetch_with_endpoints(
    version: int,
    head: bytes | memoryview,
    size: int,
    upstream: "Channel",
    client: "Channel",
    registry: "BrokerRegistry",
) -> None:
    """Send one Fetch response of ``size`` bytes (prefix excluded) from ``upstream`` to ``client``.

    ``head``: the response's first bytes as they must go out (throttle_time_ms already patched,
    same length as the bytes they replace, which are still unconsumed in ``upstream``).
    :raises MalformedFrame: the response does not follow the Fetch layout.
    """
    walker = layout.fetch_response(version)
    op, pos = _walk_in_memory(walker, head)
    client.write(_INT32.pack(size) + bytes(head[:pos]))
    upstream.consume(4 + pos)
    while op is not None:
        value, pos = await _do_op(op, pos, size, upstream, client)
        op = _send(walker, value)
    await _relay_tagged_fields(size - pos, upstream, client, registry)


def _send(walker: layout.Walker, value: int | None) -> layout.Op | None:
    try:
        return walker.send(value)
    except StopIteration:
        return None


def _walk_in_memory(walker: layout.Walker, head: bytes | memoryview) -> tuple[layout.Op | None, int]:
    """Run the walker over ``head`` until an operation needs bytes beyond it.

    :returns: (that pending operation, or None when the walker finished; its offset).
    """
    pos, end = 0, len(head)
    op = _send(walker, None)
    while op is not None:
        kind = op[0]
        if kind == layout.MARK:
            value = None
        elif kind == layout.SKIP:
            if pos + op[1] > end:
                break
            value, pos = None, pos + op[1]
        elif kind == layout.UVARINT:
            try:
                value, pos = read_uvarint(head, pos)
            except MalformedFrame:
                if end - pos >= _MAX_UVARINT_BYTES:
                    raise
                break
        else:
            width = 2 if kind == layout.INT16 else 4
            if pos + width > end:
                break
            value, pos = (_INT16 if kind == layout.INT16 else _INT32).unpack_from(head, pos)[0], pos + width
        op = _send(walker, value)
    return op, pos


async def _do_op(op: layout.Op, pos: int, size: int, upstream: "Channel", client: "Channel") -> tuple[int | None, int]:
    """Carry out one walker operation on the stream -> (value for the walker, new offset)."""
    kind = op[0]
    if kind == layout.MARK:
        return None, pos
    if kind == layout.SKIP:
        count = op[1]
        _check_within(pos + count, size)
        if count <= READ_LIMIT_BYTES:
            await upstream.read_ahead(count)
            upstream.hold(count)
        else:
            upstream.flush_held()
            await upstream.forward(count, client)
        return None, pos + count
    if kind == layout.UVARINT:
        view = await upstream.read_ahead(min(_MAX_UVARINT_BYTES, size - pos))
        value, used = read_uvarint(view, 0)
        upstream.hold(used)
        return value, pos + used
    width = 2 if kind == layout.INT16 else 4
    _check_within(pos + width, size)
    view = await upstream.read_ahead(width)
    value = (_INT16 if kind == layout.INT16 else _INT32).unpack_from(view, 0)[0]
    upstream.hold(width)
    return value, pos + width


def _check_within(pos: int, size: int) -> None:
    if pos > size:
        raise MalformedFrame("fetch response field runs past the frame")


async def _relay_tagged_fields(count: int, upstream: "Channel", client: "Channel", registry: "BrokerRegistry") -> None:
    """The last ``count`` bytes are the top-level tagged fields: rewritten (same length) or held."""
    if count < 1:
        raise MalformedFrame("fetch response ends before its tagged fields")
    section = bytes(await upstream.read_ahead(count))
    rewrite = prepare_tagged_section_rewrite(section, same_length=True)
    if rewrite is None:
        upstream.hold(count)
        upstream.flush_held()
        return
    upstream.flush_held()  # binding a listener may wait: what was read goes first
    replacement = rewrite.apply(await registry.map_addresses(rewrite.addresses))
    if len(replacement) != count:
        raise MalformedFrame("fetch response NodeEndpoints could not be rewritten at the same length")
    client.write(replacement)
    upstream.consume(count)
