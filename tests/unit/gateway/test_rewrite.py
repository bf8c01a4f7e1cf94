"""Address rewriting: hand-written Metadata splice (golden bytes) and kafka-python paths."""

import pytest

from kconfigs_enforcement.gateway.headers import MalformedFrame
from kconfigs_enforcement.gateway.rewrite import encode_metadata_brokers, parse_metadata_brokers, prepare_rewrite

MAPPING = {("10.0.0.1", 9092): ("gw", 30001), ("10.0.0.2", 9092): ("gw", 30002)}

# Metadata v1 response: correlation 5 | brokers [1: "10.0.0.1":9092 rack "r1"] | controller 1 | topics []
METADATA_V1 = bytes.fromhex(
    "0000000500000001000000010008" + b"10.0.0.1".hex() + "000023840002" + b"r1".hex() + "0000000100000000"
)
# ... after rewriting: host "gw", port 30001 (0x7531); everything else identical
METADATA_V1_REWRITTEN = bytes.fromhex(
    "0000000500000001000000010002" + b"gw".hex() + "000075310002" + b"r1".hex() + "0000000100000000"
)


def test_metadata_v1_splice_golden_bytes():
    rewrite = prepare_rewrite(3, 1, METADATA_V1, splice_threshold_bytes=0)
    assert rewrite.addresses == [("10.0.0.1", 9092)]
    assert rewrite.apply(MAPPING) == METADATA_V1_REWRITTEN


def test_metadata_v1_kafka_python_path_gives_the_same_bytes():
    assert prepare_rewrite(3, 1, METADATA_V1).apply(MAPPING) == METADATA_V1_REWRITTEN


# Metadata v12 (flexible): corr 6, header tags 0 | throttle 0 | brokers compact [2: "10.0.0.2":9092 rack null tags{tag 7: "z"}]
# | cluster_id "c" | controller 2 | topics [] | tags 0
METADATA_V12_BROKERS = bytes.fromhex("020000000209" + b"10.0.0.2".hex() + "0000238400010701" + b"z".hex())
METADATA_V12 = (
    bytes.fromhex("000000060000000000") + METADATA_V12_BROKERS + bytes.fromhex("02" + b"c".hex() + "000000020100")
)


def test_metadata_v12_splice_keeps_unknown_broker_tags():
    rewritten = prepare_rewrite(3, 12, METADATA_V12, splice_threshold_bytes=0).apply(MAPPING)
    expected_brokers = bytes.fromhex("020000000203" + b"gw".hex() + "0000753200010701" + b"z".hex())
    assert rewritten == METADATA_V12.replace(METADATA_V12_BROKERS, expected_brokers)


def test_parse_metadata_brokers_reports_end_offset():
    brokers, end = parse_metadata_brokers(METADATA_V12, 9, 12)
    assert [(b.node_id, b.host, b.port) for b in brokers] == [(2, "10.0.0.2", 9092)]
    assert METADATA_V12[end:] == bytes.fromhex("02" + b"c".hex() + "000000020100")


def test_encode_metadata_brokers_non_flexible():
    assert encode_metadata_brokers([(1, "h", 1, b"\xff\xff")], flexible=False) == bytes.fromhex(
        "000000010000000100016800000001ffff"
    )


@pytest.mark.parametrize("version", [0, 1, 4, 8, 9, 10, 12, 13])
def test_splice_and_kafka_python_agree_for_every_metadata_version(version):
    from kafka.protocol.metadata import MetadataResponse as M

    brokers = [
        M.MetadataResponseBroker(node_id=i, host=f"10.0.0.{i}", port=9092, rack="r" if version else None)
        for i in (1, 2)
    ]
    topics = [M.MetadataResponseTopic(name=f"t{i}", partitions=[]) for i in range(20)]
    response = M[version](brokers=brokers, controller_id=1, topics=topics)
    response.with_header(correlation_id=11)
    frame = bytes(response.encode(header=True))
    by_library = prepare_rewrite(3, version, frame).apply(MAPPING)
    by_splice = prepare_rewrite(3, version, frame, splice_threshold_bytes=0).apply(MAPPING)
    assert by_library == by_splice
    decoded = M[version].decode(by_splice, header=True)
    assert [(b.host, b.port) for b in decoded.brokers] == [("gw", 30001), ("gw", 30002)]


def test_unmapped_address_fails_closed():
    with pytest.raises(KeyError):
        prepare_rewrite(3, 1, METADATA_V1, splice_threshold_bytes=0).apply({})


def test_truncated_metadata_is_malformed():
    with pytest.raises(MalformedFrame):
        prepare_rewrite(3, 1, METADATA_V1[:15], splice_threshold_bytes=0)


@pytest.mark.parametrize("version", [0, 3])
def test_find_coordinator_single_node(version):
    from kafka.protocol.metadata import FindCoordinatorResponse as F

    response = F[version](error_code=0, node_id=1, host="10.0.0.1", port=9092)
    response.with_header(correlation_id=1)
    out = prepare_rewrite(10, version, bytes(response.encode(header=True))).apply(MAPPING)
    decoded = F[version].decode(out, header=True)
    assert (decoded.node_id, decoded.host, decoded.port) == (1, "gw", 30001)


def test_find_coordinator_v4_array_skips_error_entries():
    from kafka.protocol.metadata import FindCoordinatorResponse as F

    coordinators = [
        F.Coordinator(key="g", node_id=2, host="10.0.0.2", port=9092, error_code=0),
        F.Coordinator(key="h", node_id=-1, host="", port=-1, error_code=15),
    ]
    response = F[4](coordinators=coordinators)
    response.with_header(correlation_id=1)
    rewrite = prepare_rewrite(10, 4, bytes(response.encode(header=True)))
    assert rewrite.addresses == [("10.0.0.2", 9092)]
    decoded = F[4].decode(rewrite.apply(MAPPING), header=True)
    assert [(c.host, c.port) for c in decoded.coordinators] == [("gw", 30002), ("", -1)]


def test_describe_cluster_brokers_are_rewritten():
    from kafka.protocol.admin import DescribeClusterResponse as D

    response = D[1](
        cluster_id="c",
        controller_id=1,
        brokers=[D.DescribeClusterBroker(broker_id=1, host="10.0.0.1", port=9092, rack=None)],
    )
    response.with_header(correlation_id=1)
    decoded = D[1].decode(prepare_rewrite(60, 1, bytes(response.encode(header=True))).apply(MAPPING), header=True)
    assert [(b.host, b.port) for b in decoded.brokers] == [("gw", 30001)]


def test_other_apis_are_not_rewritten():
    assert prepare_rewrite(1, 12, b"\x00\x00\x00\x01") is None
