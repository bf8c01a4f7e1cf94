"""Address rewriting in the data plane (``dataplane/rewrite.rs``, through ``_native.testing``):
Metadata golden bytes, every Metadata version re-decoded by kafka-python (an independent codec),
FindCoordinator, DescribeCluster, and failing closed."""

import pytest

from kconfigs_enforcement._native import testing as dataplane

MAPPING = {("10.0.0.1", 9092): ("gw", 30001), ("10.0.0.2", 9092): ("gw", 30002)}

# Metadata v1 response: correlation 5 | brokers [1: "10.0.0.1":9092 rack "r1"] | controller 1 | topics []
METADATA_V1 = bytes.fromhex(
    "0000000500000001000000010008" + b"10.0.0.1".hex() + "000023840002" + b"r1".hex() + "0000000100000000"
)
# ... after rewriting: host "gw", port 30001 (0x7531); everything else identical
METADATA_V1_REWRITTEN = bytes.fromhex(
    "0000000500000001000000010002" + b"gw".hex() + "000075310002" + b"r1".hex() + "0000000100000000"
)


def test_metadata_v1_golden_bytes():
    assert dataplane.response_addresses(3, 1, METADATA_V1) == [("10.0.0.1", 9092)]
    assert dataplane.rewrite_addresses(3, 1, METADATA_V1, MAPPING) == METADATA_V1_REWRITTEN


# Metadata v12 (flexible): corr 6, header tags 0 | throttle 0
# | brokers compact [2: "10.0.0.2":9092 rack null tags{tag 7: "z"}]
# | cluster_id "c" | controller 2 | topics [] | tags 0
METADATA_V12_BROKERS = bytes.fromhex("020000000209" + b"10.0.0.2".hex() + "0000238400010701" + b"z".hex())
METADATA_V12 = (
    bytes.fromhex("000000060000000000") + METADATA_V12_BROKERS + bytes.fromhex("02" + b"c".hex() + "000000020100")
)


def test_metadata_v12_keeps_unknown_broker_tags():
    rewritten = dataplane.rewrite_addresses(3, 12, METADATA_V12, MAPPING)
    expected_brokers = bytes.fromhex("020000000203" + b"gw".hex() + "0000753200010701" + b"z".hex())
    assert rewritten == METADATA_V12.replace(METADATA_V12_BROKERS, expected_brokers)


@pytest.mark.parametrize("version", [0, 1, 4, 8, 9, 10, 12, 13])
def test_every_metadata_version_gives_the_bytes_kafka_python_writes(version):
    from kafka.protocol.metadata import MetadataResponse as M

    def response(hosts):
        brokers = [
            M.MetadataResponseBroker(node_id=i, host=host, port=port, rack="r" if version else None)
            for i, (host, port) in enumerate(hosts, 1)
        ]
        topics = [M.MetadataResponseTopic(name=f"t{i}", partitions=[]) for i in range(20)]
        message = M[version](brokers=brokers, controller_id=1, topics=topics)
        message.with_header(correlation_id=11)
        return bytes(message.encode(header=True))

    upstream = [("10.0.0.1", 9092), ("10.0.0.2", 9092)]
    out = dataplane.rewrite_addresses(3, version, response(upstream), MAPPING)
    assert out == response([MAPPING[a] for a in upstream])
    decoded = M[version].decode(out, header=True)
    assert [(b.host, b.port) for b in decoded.brokers] == [("gw", 30001), ("gw", 30002)]


def test_unmapped_address_fails_closed():
    with pytest.raises(ValueError, match="no gateway listener for broker 10.0.0.1:9092"):
        dataplane.rewrite_addresses(3, 1, METADATA_V1, {})


def test_truncated_metadata_is_malformed():
    with pytest.raises(ValueError, match="cannot decode api 3 v1 response"):
        dataplane.rewrite_addresses(3, 1, METADATA_V1[:15], MAPPING)


@pytest.mark.parametrize("version", [0, 3])
def test_find_coordinator_single_node(version):
    from kafka.protocol.metadata import FindCoordinatorResponse as F

    response = F[version](error_code=0, node_id=1, host="10.0.0.1", port=9092)
    response.with_header(correlation_id=1)
    out = dataplane.rewrite_addresses(10, version, bytes(response.encode(header=True)), MAPPING)
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
    frame = bytes(response.encode(header=True))
    assert dataplane.response_addresses(10, 4, frame) == [("10.0.0.2", 9092)]
    decoded = F[4].decode(dataplane.rewrite_addresses(10, 4, frame, MAPPING), header=True)
    assert [(c.host, c.port) for c in decoded.coordinators] == [("gw", 30002), ("", -1)]


def test_describe_cluster_brokers_are_rewritten():
    from kafka.protocol.admin import DescribeClusterResponse as D

    response = D[1](
        cluster_id="c",
        controller_id=1,
        brokers=[D.DescribeClusterBroker(broker_id=1, host="10.0.0.1", port=9092, rack=None)],
    )
    response.with_header(correlation_id=1)
    out = dataplane.rewrite_addresses(60, 1, bytes(response.encode(header=True)), MAPPING)
    assert [(b.host, b.port) for b in D[1].decode(out, header=True).brokers] == [("gw", 30001)]


def test_other_apis_are_not_rewritten():
    assert dataplane.rewrite_addresses(1, 12, b"\x00\x00\x00\x01", MAPPING) is None
