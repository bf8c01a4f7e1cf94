"""Broker-address rewriting for every address-bearing response the gateway lets through.

Two phases so the (async) listener registry can bind ports in between: ``prepare_rewrite``
decodes and lists the upstream addresses; ``AddressRewrite.apply(mapping)`` re-encodes with the
gateway's addresses. Unmapped addresses fail closed (KeyError), never leak.

Metadata responses above ``splice_threshold_bytes`` are not re-encoded by kafka-python (50-85 ms
for 440 KB on the event loop, and it would drop unknown tagged fields): the broker list comes
right after ``throttle_time_ms``, so we hand-rewrite just that prefix and splice the rest.

Produce v10+ and Fetch v16+ responses carry KIP-951 ``NodeEndpoints`` (the leaders of partitions
that answered NOT_LEADER_OR_FOLLOWER) in their top-level tagged fields, at the very end of the
frame. :mod:`layout` finds that section without decoding the rest; only it is re-encoded (other
tags are copied verbatim). A NodeEndpoint is laid out exactly like a flexible Metadata broker
(node id, host, port, rack, tags), so the Metadata broker parser/encoder serve both.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kconfigs_enforcement.gateway import codec, layout
from kconfigs_enforcement.gateway.headers import MalformedFrame, read_uvarint, response_body_offset, skip_tagged_fields
from kconfigs_enforcement.gateway.versions import DESCRIBE_CLUSTER, FIND_COORDINATOR, METADATA

Address = tuple[str, int]
AddressMap = Mapping[Address, Address]
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
METADATA_FIRST_FLEXIBLE = 9
METADATA_FIRST_THROTTLE = 3
METADATA_FIRST_RACK = 1
DEFAULT_SPLICE_THRESHOLD_BYTES = 64 * 1024
REWRITTEN_APIS = frozenset({METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER})
NODE_ENDPOINTS_TAG = 0
#: the unknown top-level tag that pads a same-length rewrite (clients skip unknown tags; every
#: version the gateway lets through defines only tag 0 at the top level of Produce and Fetch)
PADDING_TAG = 127


@dataclass
class AddressRewrite:
    """Upstream addresses found in one response, and how to re-encode it once they are mapped."""

    addresses: list[Address]
    _apply: Callable[[AddressMap], bytes]

    def apply(self, mapping: AddressMap) -> bytes:
        """The rewritten frame (header + body). :raises KeyError: for an unmapped address."""
        return self._apply(mapping)


def prepare_rewrite(
    api_key: int, version: int, frame: bytes, splice_threshold_bytes: int = DEFAULT_SPLICE_THRESHOLD_BYTES
) -> AddressRewrite | None:
    """An :class:`AddressRewrite` for address-bearing responses, None for every other API.

    :raises MalformedFrame, ValueError: when the frame cannot be decoded.
    """
    if layout.has_node_endpoints(api_key, version):
        return node_endpoints_rewrite(api_key, version, frame)
    if api_key not in REWRITTEN_APIS:
        return None
    if api_key == METADATA and len(frame) > splice_threshold_bytes:
        return _metadata_splice(version, frame)
    try:
        message = codec.decode_response(api_key, version, frame)
    except ValueError:
        raise
    except Exception as err:  # kafka-python raises assorted errors on truncated bytes
        raise MalformedFrame(f"cannot decode api {api_key} v{version} response: {err}") from err
    nodes = _address_holders(api_key, version, message)
    addresses = [(n.host, n.port) for n in nodes if _is_real(n)]

    def apply(mapping: AddressMap) -> bytes:
        for node in nodes:
            if _is_real(node):
                node.host, node.port = mapping[(node.host, node.port)]
        return codec.encode_message(message)

    return AddressRewrite(addresses, apply)


def _is_real(node: Any) -> bool:
    # FindCoordinator errors carry node_id -1, host "" and port -1: nothing to rewrite or leak.
    return bool(node.host) and node.port >= 0


def _address_holders(api_key: int, version: int, message: Any) -> list[Any]:
    """The decoded sub-objects that have ``host``/``port`` attributes."""
    if api_key == FIND_COORDINATOR:
        return list(message.coordinators) if version >= 4 else [message]
    return list(message.brokers)  # Metadata, DescribeCluster


@dataclass(frozen=True)
class _BrokerSpan:
    node_id: int
    host: str
    port: int
    tail: bytes  # rack (+ tagged fields) copied verbatim


def _metadata_splice(version: int, frame: bytes) -> AddressRewrite:
    flexible = version >= METADATA_FIRST_FLEXIBLE
    pos = response_body_offset(frame, flexible)
    if version >= METADATA_FIRST_THROTTLE:
        pos += 4
    start = pos
    brokers, end = parse_metadata_brokers(frame, start, version)

    def apply(mapping: AddressMap) -> bytes:
        rewritten = [(b.node_id, *mapping[(b.host, b.port)], b.tail) for b in brokers]
        return frame[:start] + encode_metadata_brokers(rewritten, flexible) + frame[end:]

    return AddressRewrite([(b.host, b.port) for b in brokers], apply)


def parse_metadata_brokers(frame: bytes, pos: int, version: int) -> tuple[list[_BrokerSpan], int]:
    """Hand-parse Metadata's Brokers array at ``pos`` -> (brokers, end offset).

    :raises MalformedFrame: on truncation or negative lengths.
    """
    flexible = version >= METADATA_FIRST_FLEXIBLE
    count, pos = _read_array_length(frame, pos, flexible)
    brokers = []
    for _ in range(count):
        node_id, pos = _read_int32(frame, pos)
        host, pos = _read_string(frame, pos, flexible)
        port, pos = _read_int32(frame, pos)
        tail_start = pos
        if version >= METADATA_FIRST_RACK:
            _rack, pos = _read_string(frame, pos, flexible, nullable=True)
        if flexible:
            pos = skip_tagged_fields(frame, pos)
        brokers.append(_BrokerSpan(node_id, host, port, bytes(frame[tail_start:pos])))
    return brokers, pos


def encode_metadata_brokers(brokers: list[tuple[int, str, int, bytes]], flexible: bool) -> bytes:
    """Encode (node_id, host, port, raw tail) entries as Metadata's Brokers array."""
    out = bytearray(_uvarint(len(brokers) + 1) if flexible else _INT32.pack(len(brokers)))
    for node_id, host, port, tail in brokers:
        raw = host.encode("utf-8")
        out += _INT32.pack(node_id)
        out += (_uvarint(len(raw) + 1) if flexible else _INT16.pack(len(raw))) + raw
        out += _INT32.pack(port) + tail
    return bytes(out)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_int32(buf: bytes, pos: int) -> tuple[int, int]:
    if pos + 4 > len(buf):
        raise MalformedFrame("metadata response truncated")
    return _INT32.unpack_from(buf, pos)[0], pos + 4


def _read_array_length(buf: bytes, pos: int, flexible: bool) -> tuple[int, int]:
    if flexible:
        n, pos = read_uvarint(buf, pos)
        return max(n - 1, 0), pos
    n, pos = _read_int32(buf, pos)
    if n < 0:
        raise MalformedFrame("negative broker count in metadata response")
    return n, pos


def _read_string(buf: bytes, pos: int, flexible: bool, nullable: bool = False) -> tuple[str | None, int]:
    if flexible:
        n, pos = read_uvarint(buf, pos)
        length = n - 1
    else:
        if pos + 2 > len(buf):
            raise MalformedFrame("metadata response truncated")
        length, pos = _INT16.unpack_from(buf, pos)[0], pos + 2
    if length < 0:
        if nullable:
            return None, pos
        raise MalformedFrame("null host in metadata response")
    if pos + length > len(buf):
        raise MalformedFrame("string overruns metadata response")
    return buf[pos : pos + length].decode("utf-8", errors="replace"), pos + length


def node_endpoints_rewrite(api_key: int, version: int, frame: bytes | memoryview) -> AddressRewrite | None:
    """Rewrite for a whole Produce v10+ / Fetch v16+ response; None when it has no NodeEndpoints
    (the usual case: the broker sends them only with NOT_LEADER_OR_FOLLOWER).

    :raises MalformedFrame: the frame does not follow the layout or has bytes after its tags.
    """
    if api_key == 0:
        tags_at = layout.produce_positions(frame, version)[1]
    else:
        tags_at = layout.fetch_tags_position(frame, version)
    section = prepare_tagged_section_rewrite(bytes(frame[tags_at:]), same_length=False)
    if section is None:
        return None
    head = frame[:tags_at]
    return AddressRewrite(section.addresses, lambda mapping: bytes(head) + section.apply(mapping))


def prepare_tagged_section_rewrite(section: bytes, same_length: bool) -> AddressRewrite | None:
    """Rewrite of a top-level tagged-field section (all of it, nothing after) whose tag 0 is
    NodeEndpoints; None when tag 0 is absent.

    ``same_length``: the result must be exactly as long as ``section`` (the frame's length prefix
    has already gone to the client, see fetch_stream). A shorter rewrite is padded with an unknown
    tag; when no padding fits (the gateway's addresses are longer), tag 0 is replaced by an
    unknown tag of the same size filled with zeros: the client learns no leader from this response
    and refreshes its metadata instead (what it does with brokers older than KIP-951).
    :raises MalformedFrame: the section is malformed or does not end where ``section`` ends.
    """
    fields = parse_tagged_fields(section)
    value = fields.get(NODE_ENDPOINTS_TAG)
    if value is None:
        return None
    endpoints, end = parse_metadata_brokers(value, 0, METADATA_FIRST_FLEXIBLE)
    if end != len(value):
        raise MalformedFrame("bytes after NodeEndpoints in its tagged field")

    def apply(mapping: AddressMap) -> bytes:
        rewritten = [(e.node_id, *mapping[(e.host, e.port)], e.tail) for e in endpoints]
        new_fields = {**fields, NODE_ENDPOINTS_TAG: encode_metadata_brokers(rewritten, flexible=True)}
        encoded = encode_tagged_fields(new_fields)
        if not same_length or len(encoded) == len(section):
            return encoded
        padded = _pad_to(new_fields, len(section))
        if padded is not None:
            return padded
        return encode_tagged_fields(
            {**fields, NODE_ENDPOINTS_TAG: bytes(len(value))}, rename={NODE_ENDPOINTS_TAG: PADDING_TAG}
        )

    return AddressRewrite([(e.host, e.port) for e in endpoints], apply)


def _pad_to(fields: dict[int, bytes], size: int) -> bytes | None:
    """``fields`` plus a zero-filled PADDING_TAG field, encoded to exactly ``size`` bytes, if any fits."""
    if PADDING_TAG in fields:
        return None
    empty_pad = len(encode_tagged_fields({**fields, PADDING_TAG: b""}))
    for width in range(1, 6):  # the filler's size varint takes 1-5 bytes
        filler = size - empty_pad - (width - 1)
        if filler >= 0 and len(_uvarint(filler)) == width:
            return encode_tagged_fields({**fields, PADDING_TAG: bytes(filler)})
    return None


def parse_tagged_fields(section: bytes) -> dict[int, bytes]:
    """A whole tagged-field section -> {tag: raw value}. :raises MalformedFrame:"""
    count, pos = read_uvarint(section, 0)
    fields: dict[int, bytes] = {}
    for _ in range(count):
        tag, pos = read_uvarint(section, pos)
        size, pos = read_uvarint(section, pos)
        if pos + size > len(section) or tag in fields:
            raise MalformedFrame("tagged field overruns the response or repeats a tag")
        fields[tag] = section[pos : pos + size]
        pos += size
    if pos != len(section):
        raise MalformedFrame("bytes after the top-level tagged fields")
    return fields


def encode_tagged_fields(fields: dict[int, bytes], rename: Mapping[int, int] | None = None) -> bytes:
    """Encode {tag: raw value} as a tagged-field section, tags ascending (``rename``: new tag numbers)."""
    renamed = {(rename or {}).get(tag, tag): value for tag, value in fields.items()}
    out = bytearray(_uvarint(len(renamed)))
    for tag in sorted(renamed):
        out += _uvarint(tag) + _uvarint(len(renamed[tag])) + renamed[tag]
    return bytes(out)
