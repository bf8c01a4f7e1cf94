"""Broker-address rewriting for every address-bearing response the gateway lets through.

Two phases so the (async) listener registry can bind ports in between: ``prepare_rewrite``
decodes and lists the upstream addresses; ``AddressRewrite.apply(mapping)`` re-encodes with the
gateway's addresses. Unmapped addresses fail closed (KeyError), never leak.

Metadata responses above ``splice_threshold_bytes`` are not re-encoded by kafka-python (50-85 ms
for 440 KB on the event loop, and it would drop unknown tagged fields): the broker list comes
right after ``throttle_time_ms``, so we hand-rewrite just that prefix and splice the rest.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from enforcement.gateway import codec
from enforcement.gateway.headers import MalformedFrame, read_uvarint, response_body_offset, skip_tagged_fields
from enforcement.gateway.versions import DESCRIBE_CLUSTER, FIND_COORDINATOR, METADATA

Address = tuple[str, int]
AddressMap = Mapping[Address, Address]
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
METADATA_FIRST_FLEXIBLE = 9
METADATA_FIRST_THROTTLE = 3
METADATA_FIRST_RACK = 1
DEFAULT_SPLICE_THRESHOLD_BYTES = 64 * 1024
REWRITTEN_APIS = frozenset({METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER})


@dataclass
class AddressRewrite:
    """Upstream addresses found in one response, and how to re-encode it once they are mapped."""

    addresses: list[Address]
    _apply: Callable[[AddressMap], bytes]

    def apply(self, mapping: AddressMap) -> bytes:
        """The rewritten frame (header + body). :raises KeyError: for an unmapped address."""
        return self._apply(mapping)


def prepare_rewrite(api_key: int, version: int, frame: bytes, splice_threshold_bytes: int = DEFAULT_SPLICE_THRESHOLD_BYTES) -> AddressRewrite | None:
    """An :class:`AddressRewrite` for address-bearing responses, None for every other API.

    :raises MalformedFrame, ValueError: when the frame cannot be decoded.
    """
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
    return buf[pos:pos + length].decode("utf-8", errors="replace"), pos + length
