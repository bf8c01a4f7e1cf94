"""Golden bytes for the hand-written request/response prefix parsers."""

import pytest

from kconfigs_enforcement.gateway.headers import (
    MalformedFrame,
    parse_request_prefix,
    parse_response_correlation_id,
    produce_acks,
    read_uvarint,
    skip_tagged_fields,
)

# Metadata v1 request, header v1: api_key=3, api_version=1, correlation_id=7, client_id="app", body: topics=null
METADATA_V1 = bytes.fromhex("00030001000000070003") + b"app" + bytes.fromhex("ffffffff")


def test_request_prefix_reads_key_version_correlation_and_client_id():
    prefix = parse_request_prefix(METADATA_V1)
    assert (prefix.api_key, prefix.api_version, prefix.correlation_id, prefix.client_id) == (3, 1, 7, "app")
    assert prefix.client_id_end == 13


def test_null_client_id_is_none():
    frame = bytes.fromhex("0012000300000001ffff00")
    prefix = parse_request_prefix(frame)
    assert prefix.client_id is None and prefix.client_id_end == 10


def test_client_id_overrunning_the_frame_is_malformed():
    with pytest.raises(MalformedFrame):
        parse_request_prefix(bytes.fromhex("00030001000000070010") + b"ab")


def test_truncated_header_is_malformed():
    with pytest.raises(MalformedFrame):
        parse_request_prefix(bytes.fromhex("000300010000"))


def test_response_correlation_id_is_first_four_bytes():
    assert parse_response_correlation_id(bytes.fromhex("0000002a00")) == 42
    with pytest.raises(MalformedFrame):
        parse_response_correlation_id(b"\x00\x01")


def test_uvarint_multi_byte_and_overlong():
    assert read_uvarint(bytes([0x96, 0x01]), 0) == (150, 2)
    with pytest.raises(MalformedFrame):
        read_uvarint(bytes([0x80] * 6), 0)
    with pytest.raises(MalformedFrame):
        read_uvarint(bytes([0x80]), 0)


def test_skip_tagged_fields_skips_tag_size_and_bytes():
    # 2 fields: tag 0 size 3 "abc", tag 5 size 0
    assert skip_tagged_fields(bytes([2, 0, 3]) + b"abc" + bytes([5, 0]) + b"rest", 0) == 8


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
    assert produce_acks(frame, parse_request_prefix(frame)) == acks


def test_produce_acks_v3_follows_nullable_transactional_id():
    frame = _produce(3, b"\x00\x02tx" + b"\x00\x00" + b"\x00\x00\x75\x30")
    assert produce_acks(frame, parse_request_prefix(frame)) == 0
    frame = _produce(7, b"\xff\xff" + b"\xff\xff" + b"\x00\x00\x75\x30")
    assert produce_acks(frame, parse_request_prefix(frame)) == -1


def test_produce_acks_v9_follows_header_tags_and_compact_transactional_id():
    frame = _produce(9, b"\x03tx" + b"\x00\x01" + b"\x00\x00\x75\x30")
    assert produce_acks(frame, parse_request_prefix(frame)) == 1
    frame = _produce(9, b"\x00" + b"\x00\x00" + b"\x00\x00\x75\x30")  # null transactional_id
    assert produce_acks(frame, parse_request_prefix(frame)) == 0


def test_produce_acks_truncated_is_malformed():
    frame = _produce(3, b"\x00\x05tx")
    with pytest.raises(MalformedFrame):
        produce_acks(frame, parse_request_prefix(frame))


def test_produce_acks_agrees_with_kafka_python_encoding():
    from kafka.protocol.producer import ProduceRequest

    for version in range(0, 10):
        request = ProduceRequest[version](
            transactional_id="t" if version >= 3 else None, acks=-1, timeout_ms=5, topic_data=[]
        )
        request.with_header(correlation_id=3, client_id="c")
        frame = bytes(request.encode(header=True))
        assert produce_acks(frame, parse_request_prefix(frame)) == -1, version
