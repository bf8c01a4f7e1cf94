"""Where things are in Produce and Fetch responses, without decoding them: the layout walkers.

Why not kafka-python (which knows these schemas): Produce and Fetch are the hot path, and the
gateway only needs two positions in them: ``throttle_time_ms`` (to patch it in place) and the
top-level tagged fields, which hold KIP-951 ``NodeEndpoints`` (tag 0 in Produce v10+ and Fetch
v16+; they list broker addresses, so the gateway must rewrite them). kafka-python would decode
every partition into objects, needs the whole frame (a Fetch response streams, its records
spliced socket to socket), and drops unknown tagged fields when it re-encodes.

A walker is a generator of operations (sans I/O), so the same layout code serves a frame held in
memory (:func:`walk_frame`) and a Fetch response streaming through
(:mod:`enforcement.gateway.fetch_stream`), where only the small structural fields are read and each
partition's records are forwarded unread. A walker starts at the response header and returns at
the start of the top-level tagged fields (or at the end of a non-flexible response).

Layouts follow Kafka's ``ProduceResponse.json`` (versions 0-13, flexible from 9) and
``FetchResponse.json`` (versions 0-18, flexible from 12), as shipped in kafka-clients 4.3.1.
"""

from __future__ import annotations

import struct
from typing import Generator

from enforcement.gateway.headers import MalformedFrame, read_uvarint

#: Operations a walker yields. SKIP n: n opaque bytes. INT16/INT32: read one (sent back).
#: UVARINT: read an unsigned varint (sent back). MARK name: the current position is ``name``.
SKIP, INT16, INT32, UVARINT, MARK = range(5)
Op = tuple
Walker = Generator[Op, "int | None", None]

#: highest versions these walkers were written against (newer ones may move or add fields)
PRODUCE_MAX_VERSION = 13
FETCH_MAX_VERSION = 18
PRODUCE_FIRST_FLEXIBLE = 9
FETCH_FIRST_FLEXIBLE = 12
#: KIP-951: the versions whose top-level tag 0 is NodeEndpoints
PRODUCE_FIRST_NODE_ENDPOINTS = 10
FETCH_FIRST_NODE_ENDPOINTS = 16
THROTTLE = "throttle"
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def produce_response(version: int) -> Walker:
    """ProduceResponse v0-13: responses[] (name or topic id, partitions[]), throttle, tags."""
    flexible = version >= PRODUCE_FIRST_FLEXIBLE
    yield from _header(flexible)
    for _topic in range((yield from _array_length(flexible))):
        if version >= 13:
            yield SKIP, 16  # topic id (uuid)
        else:
            yield from _string(flexible)
        for _partition in range((yield from _array_length(flexible))):
            # index int32, error int16, base offset int64, log append time (v2+), log start offset (v5+)
            yield SKIP, 14 + (8 if version >= 2 else 0) + (8 if version >= 5 else 0)
            if version >= 8:
                for _error in range((yield from _array_length(flexible))):
                    yield SKIP, 4  # batch index
                    yield from _string(flexible)  # batch index error message (nullable)
                    yield from _tags(flexible)
                yield from _string(flexible)  # error message (nullable)
            yield from _tags(flexible)  # CurrentLeader (tag 0, v10+) is per partition: no address
        yield from _tags(flexible)
    if version >= 1:
        yield MARK, THROTTLE
        yield SKIP, 4


def fetch_response(version: int) -> Walker:
    """FetchResponse v0-18: throttle (v1+), error and session (v7+), responses[], tags."""
    flexible = version >= FETCH_FIRST_FLEXIBLE
    yield from _header(flexible)
    if version >= 1:
        yield MARK, THROTTLE
        yield SKIP, 4
    if version >= 7:
        yield SKIP, 6  # error code, session id
    for _topic in range((yield from _array_length(flexible))):
        if version >= 13:
            yield SKIP, 16
        else:
            yield from _string(flexible)
        for _partition in range((yield from _array_length(flexible))):
            # index, error, high watermark, last stable offset (v4+), log start offset (v5+)
            yield SKIP, 14 + (8 if version >= 4 else 0) + (8 if version >= 5 else 0)
            if version >= 4:
                for _aborted in range((yield from _array_length(flexible, nullable=True))):
                    yield SKIP, 16  # producer id, first offset
                    yield from _tags(flexible)
            if version >= 11:
                yield SKIP, 4  # preferred read replica
            yield from _bytes(flexible)  # records: forwarded unread
            yield from _tags(flexible)
        yield from _tags(flexible)


def _header(flexible: bool) -> Walker:
    yield SKIP, 4  # correlation id
    yield from _tags(flexible)


def _tags(flexible: bool) -> Walker:
    if not flexible:
        return
    for _field in range((yield UVARINT,)):
        yield UVARINT,  # tag
        yield SKIP, (yield UVARINT,)


def _array_length(flexible: bool, nullable: bool = False) -> Walker:
    if flexible:
        return max((yield UVARINT,) - 1, 0)
    count = yield INT32,
    if count < 0 and not nullable:
        raise MalformedFrame(f"negative array length {count}")
    return max(count, 0)


def _string(flexible: bool) -> Walker:
    """A (nullable) string: skipped, its length read."""
    length = ((yield UVARINT,) - 1) if flexible else (yield INT16,)
    if length > 0:
        yield SKIP, length


def _bytes(flexible: bool) -> Walker:
    length = ((yield UVARINT,) - 1) if flexible else (yield INT32,)
    if length > 0:
        yield SKIP, length


def response_walker(api_key: int, version: int) -> Walker:
    """The walker for a Produce (0) or Fetch (1) response. :raises ValueError: other APIs/versions."""
    if api_key == 0 and version <= PRODUCE_MAX_VERSION:
        return produce_response(version)
    if api_key == 1 and version <= FETCH_MAX_VERSION:
        return fetch_response(version)
    raise ValueError(f"no layout for api key {api_key} v{version}")


def has_node_endpoints(api_key: int, version: int) -> bool:
    """Whether this response version may carry KIP-951 NodeEndpoints (top-level tag 0)."""
    first = {0: PRODUCE_FIRST_NODE_ENDPOINTS, 1: FETCH_FIRST_NODE_ENDPOINTS}.get(api_key)
    return first is not None and version >= first


def walk_frame(walker: Walker, frame: bytes | memoryview, pos: int = 0) -> tuple[int, dict[str, int]]:
    """Run ``walker`` over a response frame held whole (header + body, no length prefix).

    :returns: (offset where the walker stopped: the top-level tagged fields, marks by name).
    :raises MalformedFrame: a length runs past the frame.
    """
    marks: dict[str, int] = {}
    end = len(frame)
    value = None
    try:
        while True:
            op = walker.send(value)
            kind, value = op[0], None
            if kind == SKIP:
                pos += op[1]
                if pos > end:
                    raise MalformedFrame("response truncated")
            elif kind == UVARINT:
                value, pos = read_uvarint(frame, pos)
            elif kind == MARK:
                marks[op[1]] = pos
            else:
                width = 2 if kind == INT16 else 4
                if pos + width > end:
                    raise MalformedFrame("response truncated")
                value = (_INT16 if kind == INT16 else _INT32).unpack_from(frame, pos)[0]
                pos += width
    except StopIteration:
        return pos, marks
