"""Golden bytes for the hand-written request prefix parsers: the data plane's (``dataplane/wire.rs``,
through ``_native.testing``), which reads every request, and the control plane's (``headers.py``),
which reads the requests it answers; both must read the same bytes the same way."""

import pytest

from kconfigs_enforcement._native import testing as dataplane
from kconfigs_enforcement.gateway import headers


def _control_plane(frame):
    return tuple(headers.parse_request_prefix(frame))


PARSERS = pytest.mark.parametrize("parse", [dataplane.parse_request_prefix, _control_plane], ids=["data", "control"])

# Metadata v1 request, header v1: api_key=3, api_version=1, correlation_id=7, client_id="app", body: topics=null
METADATA_V1 = bytes.fromhex("00030001000000070003") + b"app" + bytes.fromhex("ffffffff")


@PARSERS
def test_request_prefix_reads_key_version_correlation_and_client_id(parse):
    # (api key, version, correlation id, client id, offset after client id)
    assert parse(METADATA_V1) == (3, 1, 7, "app", 13)


@PARSERS
def test_null_client_id_is_none(parse):
    assert parse(bytes.fromhex("0012000300000001ffff00")) == (18, 3, 1, None, 10)


@PARSERS
def test_client_id_overrunning_the_frame_is_malformed(parse):
    with pytest.raises(ValueError, match="client_id of 16 bytes overruns a 12-byte request"):
        parse(bytes.fromhex("00030001000000070010") + b"ab")


@PARSERS
def test_truncated_header_is_malformed(parse):
    with pytest.raises(ValueError, match="request of 6 bytes is shorter than a request header"):
        parse(bytes.fromhex("000300010000"))


def test_uvarint_multi_byte_and_overlong():
    assert dataplane.read_uvarint(bytes([0x96, 0x01]), 0) == (150, 2)
    with pytest.raises(ValueError, match="varint longer than 5 bytes"):
        dataplane.read_uvarint(bytes([0x80] * 6), 0)
    with pytest.raises(ValueError, match="varint runs past the end"):
        dataplane.read_uvarint(bytes([0x80]), 0)


def test_skip_tagged_fields_skips_tag_size_and_bytes():
    # 2 fields: tag 0 size 3 "abc", tag 5 size 0
    assert dataplane.skip_tagged_fields(bytes([2, 0, 3]) + b"abc" + bytes([5, 0]) + b"rest", 0) == 8


def _produce(version: int, body: bytes, client_id: bytes = b"p") -> bytes:
    header = (
        bytes.fromhex("0000")
        + version.to_bytes(2, "big")
        + bytes.fromhex("00000009")
        + len(client_id).to_bytes(2, "big")
        + client_id
    )
    if version >= 9:
        header += b"\x00"  # header v2 tagged fields
    return header + body


@pytest.mark.parametrize("acks", [0, 1, -1])
def test_produce_acks_v2_is_first_body_field(acks):
    frame = _produce(2, acks.to_bytes(2, "big", signed=True) + b"\x00\x00\x75\x30")
    assert dataplane.produce_acks(frame) == acks


def test_produce_acks_v3_follows_nullable_transactional_id():
    frame = _produce(3, b"\x00\x02tx" + b"\x00\x00" + b"\x00\x00\x75\x30")
    assert dataplane.produce_acks(frame) == 0
    frame = _produce(7, b"\xff\xff" + b"\xff\xff" + b"\x00\x00\x75\x30")
    assert dataplane.produce_acks(frame) == -1


def test_produce_acks_v9_follows_header_tags_and_compact_transactional_id():
    frame = _produce(9, b"\x03tx" + b"\x00\x01" + b"\x00\x00\x75\x30")
    assert dataplane.produce_acks(frame) == 1
    frame = _produce(9, b"\x00" + b"\x00\x00" + b"\x00\x00\x75\x30")  # null transactional_id
    assert dataplane.produce_acks(frame) == 0


def test_produce_acks_truncated_is_malformed():
    frame = _produce(3, b"\x00\x05tx")
    with pytest.raises(ValueError, match="produce request truncated before acks"):
        dataplane.produce_acks(frame)


def test_produce_acks_agrees_with_kafka_python_encoding():
    from kafka.protocol.producer import ProduceRequest

    for version in range(0, 10):
        request = ProduceRequest[version](
            transactional_id="t" if version >= 3 else None, acks=-1, timeout_ms=5, topic_data=[]
        )
        request.with_header(correlation_id=3, client_id="c")
        frame = bytes(request.encode(header=True))
        assert dataplane.produce_acks(frame) == -1, version
