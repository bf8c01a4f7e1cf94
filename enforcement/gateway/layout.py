"""Where things are in Produce and Fetch responses, without decoding them: the layout walkers.

Why not kafka-python (which knows these schemas): Produce and Fetch are the hot path, and the
gateway only needs two positions in them: ``throttle_time_ms`` (to patch it in place) and the
top-level tagged fields, which hold KIP-951 ``NodeEndpoints`` (tag 0 in Produce v10+ and Fetch
v16+; they list broker addresses, so the gateway must rewrite them). kafka-python would decode
every partition into objects, needs the whole frame (a Fetch response streams, its records
spliced socket to socket), and drops unknown tagged fields when it re-encodes.

Frames held whole (every Produce response, most Fetch responses) are walked directly
(:func:`produce_positions`, :func:`fetch_tags_position`). A Fetch response streaming through
(:mod:`kconfigs_enforcement.gateway.fetch_stream`) is walked by :func:`fetch_response`, a generator of
operations (sans I/O): only the small structural fields are read, and each partition's records are
forwarded unread. It starts at the response header and returns at the top-level tagged fields.

Layouts follow Kafka's ``ProduceResponse.json`` (versions 0-13, flexible from 9) and
``FetchResponse.json`` (versions 0-18, flexible from 12), as shipped in kafka-clients 4.3.1.
"""

from __future__ import annotations

import struct
from typing import Generator

from kconfigs_enforcement.gateway.headers import MalformedFrame, read_uvarint

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
    for _field in range((yield (UVARINT,))):
        yield (UVARINT,)  # tag
        yield SKIP, (yield (UVARINT,))


def _array_length(flexible: bool, nullable: bool = False) -> Walker:
    if flexible:
        return max((yield (UVARINT,)) - 1, 0)
    count = yield (INT32,)
    if count < 0 and not nullable:
        raise MalformedFrame(f"negative array length {count}")
    return max(count, 0)


def _string(flexible: bool) -> Walker:
    """A (nullable) string: skipped, its length read."""
    length = ((yield (UVARINT,)) - 1) if flexible else (yield (INT16,))
    if length > 0:
        yield SKIP, length


def _bytes(flexible: bool) -> Walker:
    length = ((yield (UVARINT,)) - 1) if flexible else (yield (INT32,))
    if length > 0:
        yield SKIP, length


def has_node_endpoints(api_key: int, version: int) -> bool:
    """Whether this response version may carry KIP-951 NodeEndpoints (top-level tag 0)."""
    first = {0: PRODUCE_FIRST_NODE_ENDPOINTS, 1: FETCH_FIRST_NODE_ENDPOINTS}.get(api_key)
    return first is not None and version >= first


# ---- frames held whole: the same layouts walked directly --------------------------------------
# Every Produce response and most Fetch responses are held whole. Driving a generator costs about
# 0.8 us per field (10 us for a small Produce response, on the hot path); walking the bytes
# directly costs 1-3 us. The unit tests check both walks agree on every version.


def produce_positions(frame: bytes | memoryview, version: int) -> tuple[int | None, int]:
    """(offset of throttle_time_ms or None before v1, offset of the top-level tagged fields)
    of a whole ProduceResponse (header + body, no length prefix).

    :raises MalformedFrame: a length runs past the frame.
    """
    flexible = version >= PRODUCE_FIRST_FLEXIBLE
    try:
        pos = _skip_tags_at(frame, 4) if flexible else 4
        topics, pos = _length_at(frame, pos, flexible)
        for _topic in range(topics):
            pos = pos + 16 if version >= 13 else _skip_string_at(frame, pos, flexible)
            partitions, pos = _length_at(frame, pos, flexible)
            fixed = 14 + (8 if version >= 2 else 0) + (8 if version >= 5 else 0)
            for _partition in range(partitions):
                pos += fixed
                if version >= 8:
                    errors, pos = _length_at(frame, pos, flexible)
                    for _error in range(errors):
                        pos = _skip_string_at(frame, pos + 4, flexible)
                        pos = _skip_tags_at(frame, pos) if flexible else pos
                    pos = _skip_string_at(frame, pos, flexible)
                pos = _skip_tags_at(frame, pos) if flexible else pos
            pos = _skip_tags_at(frame, pos) if flexible else pos
    except (IndexError, struct.error):
        raise MalformedFrame(f"produce response v{version} truncated") from None
    throttle = pos if version >= 1 else None
    end = pos + 4 if version >= 1 else pos
    if end > len(frame):
        raise MalformedFrame(f"produce response v{version} truncated")
    return throttle, end


def fetch_tags_position(frame: bytes | memoryview, version: int) -> int:
    """Offset of the top-level tagged fields of a whole flexible (v12+) FetchResponse.

    :raises MalformedFrame: a length runs past the frame.
    """
    if version < FETCH_FIRST_FLEXIBLE:
        raise ValueError(f"fetch response v{version} has no tagged fields")
    fixed = 30 + (4 if version >= 11 else 0)  # index ... log start offset (+ preferred replica)
    try:
        pos = _skip_tags_at(frame, 4) + 10  # throttle, error, session
        topics, pos = _length_at(frame, pos, True)
        for _topic in range(topics):
            pos = pos + 16 if version >= 13 else _skip_string_at(frame, pos, True)
            partitions, pos = _length_at(frame, pos, True)
            for _partition in range(partitions):
                aborted, pos = _length_at(frame, pos + 30, True)
                for _aborted in range(aborted):
                    pos = _skip_tags_at(frame, pos + 16)
                pos = _skip_string_at(frame, pos + fixed - 30, True)  # records: a compact length too
                pos = _skip_tags_at(frame, pos)
            pos = _skip_tags_at(frame, pos)
    except (IndexError, struct.error):
        raise MalformedFrame(f"fetch response v{version} truncated") from None
    if pos >= len(frame):
        raise MalformedFrame(f"fetch response v{version} truncated")
    return pos


def _uvarint_at(frame: bytes | memoryview, pos: int) -> tuple[int, int]:
    byte = frame[pos]
    return (byte, pos + 1) if byte < 0x80 else read_uvarint(frame, pos)


def _length_at(frame: bytes | memoryview, pos: int, flexible: bool) -> tuple[int, int]:
    """An array length (compact or int32; null counts as empty).

    Every element takes at least one byte, so a count above the bytes left is malformed: checked
    here, it cannot spin a loop that reads nothing (non-flexible Produce partitions are fixed-size).
    """
    if flexible:
        count, pos = _uvarint_at(frame, pos)
        count = max(count - 1, 0)
    else:
        count = _INT32.unpack_from(frame, pos)[0]
        if count < -1:
            raise MalformedFrame(f"negative array length {count}")
        count, pos = max(count, 0), pos + 4
    if count > len(frame) - pos:
        raise MalformedFrame(f"array of {count} elements in {len(frame) - pos} bytes")
    return count, pos


def _skip_string_at(frame: bytes | memoryview, pos: int, flexible: bool) -> int:
    """Past a (nullable, compact or int16-length) string or compact bytes."""
    if flexible:
        length, pos = _uvarint_at(frame, pos)
        return pos + max(length - 1, 0)
    return pos + 2 + max(_INT16.unpack_from(frame, pos)[0], 0)


def _skip_tags_at(frame: bytes | memoryview, pos: int) -> int:
    if frame[pos] == 0:
        return pos + 1  # the usual case: no tagged fields
    count, pos = read_uvarint(frame, pos)
    for _field in range(count):
        _tag, pos = _uvarint_at(frame, pos)
        size, pos = _uvarint_at(frame, pos)
        pos += size
    return pos
