"""KIP-951 NodeEndpoints in Produce v10+ and Fetch v16+ responses, in the data plane
(``dataplane/rewrite.rs`` and ``wire.rs``, through ``_native.testing``): rewritten to the gateway's
addresses (golden bytes, every version, present and absent), re-decoded by kafka-python (an
independent codec), throttle time patched in place, hostile bytes."""

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconfigs_enforcement._native import testing as dataplane
from kconfigs_enforcement.gateway.native_plane import throttle_first_versions
from kconfigs_enforcement.gateway.versions import FETCH_MAX_VERSION, PRODUCE_MAX_VERSION

MAPPING = {("10.0.0.2", 9092): ("gw", 30002), ("10.0.0.3", 9093): ("gateway.example", 30003)}
TOPIC_ID = uuid.UUID(bytes=bytes(range(16)))
#: what the data plane is handed at start: responses whose first body field is throttle_time_ms
THROTTLE_FIRST = set(throttle_first_versions())


def _has_node_endpoints(api_key: int, version: int) -> bool:
    return version >= (dataplane.PRODUCE_FIRST_NODE_ENDPOINTS if api_key == 0 else dataplane.FETCH_FIRST_NODE_ENDPOINTS)


def patch_throttle_time(api_key: int, version: int, frame: bytes, throttle_ms: int) -> bytes:
    return dataplane.patch_throttle(api_key, version, frame, throttle_ms, THROTTLE_FIRST)


def _hex(text: str) -> str:
    return text.encode().hex()


# Produce v10: corr 7 | header tags 0 | responses [ "t": [ partition 0, NOT_LEADER_OR_FOLLOWER (6),
# offsets -1, record_errors [], error_message null, tags {0: CurrentLeader(2, epoch 5)} ], tags 0 ]
# | throttle 0 | tags {0: NodeEndpoints [2: "10.0.0.2":9092 rack null]}
PRODUCE_V10_BODY = (
    "00000007"
    "00"
    "02"
    "02" + _hex("t") + "02"
    "00000000"
    "0006" + "ff" * 24 + "01"
    "00" + "01"
    "00"
    "09"
    "00000002"
    "00000005"
    "00" + "00" + "00000000"
)
PRODUCE_V10 = bytes.fromhex(PRODUCE_V10_BODY + "010014020000000209" + _hex("10.0.0.2") + "000023840000")
PRODUCE_V10_REWRITTEN = bytes.fromhex(PRODUCE_V10_BODY + "01000e020000000203" + _hex("gw") + "000075320000")

# Fetch v16: corr 8 | header tags 0 | throttle 0 | error 0 | session 0 | responses [ topic id:
#   [ p0: hw 1, lso 1, log start 0, aborted [], preferred -1, records "abc", tags 0 ]
#   [ p1: NOT_LEADER_OR_FOLLOWER, offsets -1, aborted [], preferred -1, records empty,
#         tags {1: CurrentLeader(3, epoch 7)} ], tags 0 ]
# | tags {0: NodeEndpoints [3: "10.0.0.3":9093 rack "r1"]}
FETCH_V16_BODY = (
    "00000008"
    "00"
    "00000000"
    "0000"
    "00000000"
    "02" + TOPIC_ID.bytes.hex() + "03" + "00000000"
    "0000"
    "0000000000000001"
    "0000000000000001"
    "0000000000000000"
    "01"
    "ffffffff"
    "04" + _hex("abc") + "00" + "00000001"
    "0006" + "ff" * 24 + "01"
    "ffffffff"
    "01" + "01"
    "01"
    "09"
    "00000003"
    "00000007"
    "00" + "00"
)
FETCH_V16 = bytes.fromhex(FETCH_V16_BODY + "010016020000000309" + _hex("10.0.0.3") + "0000238503" + _hex("r1") + "00")
FETCH_V16_REWRITTEN = bytes.fromhex(
    FETCH_V16_BODY + "01001d020000000310" + _hex("gateway.example") + "0000753303" + _hex("r1") + "00"
)


def test_produce_v10_golden_bytes():
    assert dataplane.response_addresses(0, 10, PRODUCE_V10) == [("10.0.0.2", 9092)]
    assert dataplane.rewrite_addresses(0, 10, PRODUCE_V10, MAPPING) == PRODUCE_V10_REWRITTEN


def test_fetch_v16_golden_bytes():
    assert dataplane.response_addresses(1, 16, FETCH_V16) == [("10.0.0.3", 9093)]
    assert dataplane.rewrite_addresses(1, 16, FETCH_V16, MAPPING) == FETCH_V16_REWRITTEN


def test_golden_bytes_are_what_kafka_python_reads():
    from kafka.protocol.consumer import FetchResponse as F
    from kafka.protocol.producer import ProduceResponse as P

    produce = P[10].decode(PRODUCE_V10_REWRITTEN, header=True)
    assert [(e.node_id, e.host, e.port) for e in produce.node_endpoints] == [(2, "gw", 30002)]
    assert produce.responses[0].partition_responses[0].current_leader.leader_epoch == 5
    fetch = F[16].decode(FETCH_V16_REWRITTEN, header=True)
    assert [(e.node_id, e.host, e.port, e.rack) for e in fetch.node_endpoints] == [(3, "gateway.example", 30003, "r1")]
    assert fetch.responses[0].partitions[0].records == b"abc"


def test_absent_node_endpoints_mean_no_rewrite():
    without = PRODUCE_V10[: len(PRODUCE_V10_BODY) // 2] + b"\x00"
    assert dataplane.rewrite_addresses(0, 10, without, MAPPING) is None
    assert dataplane.rewrite_addresses(1, 16, bytes.fromhex(FETCH_V16_BODY + "00"), MAPPING) is None


def test_versions_before_kip_951_are_not_walked():
    assert dataplane.rewrite_addresses(0, 9, PRODUCE_V10, MAPPING) is None
    assert dataplane.rewrite_addresses(1, 15, FETCH_V16, MAPPING) is None


@pytest.mark.parametrize("cut", [5, 20, len(PRODUCE_V10) - 3])
def test_truncated_produce_is_malformed(cut):
    with pytest.raises(ValueError):
        dataplane.rewrite_addresses(0, 10, PRODUCE_V10[:cut], MAPPING)


def test_trailing_bytes_after_the_tags_are_malformed():
    with pytest.raises(ValueError, match="1 bytes after the message"):
        dataplane.rewrite_addresses(1, 16, FETCH_V16 + b"\x00", MAPPING)


def test_unmapped_endpoint_fails_closed():
    with pytest.raises(ValueError, match="no gateway listener for broker 10.0.0.2:9092"):
        dataplane.rewrite_addresses(0, 10, PRODUCE_V10, {})


# ---- every version, built and re-decoded with kafka-python ---------------------------------


def _produce(version: int, endpoints: bool):
    from kafka.protocol.producer import ProduceResponse as P

    PP = P.TopicProduceResponse.PartitionProduceResponse
    partitions = [
        PP(
            index=0,
            error_code=0,
            base_offset=41,
            log_append_time_ms=-1,
            log_start_offset=0,
            record_errors=[PP.BatchIndexAndErrorMessage(batch_index=1, batch_index_error_message="bad")],
        ),
        PP(index=1, error_code=6, base_offset=-1, current_leader=PP.LeaderIdAndEpoch(leader_id=3, leader_epoch=9)),
    ]
    topic = P.TopicProduceResponse(
        name="orders" if version < 13 else None,
        topic_id=TOPIC_ID if version >= 13 else None,
        partition_responses=partitions,
    )
    nodes = (
        [
            P.NodeEndpoint(node_id=3, host="10.0.0.3", port=9093, rack="r1"),
            P.NodeEndpoint(node_id=2, host="10.0.0.2", port=9092, rack=None),
        ]
        if endpoints
        else []
    )
    return P[version](responses=[topic], throttle_time_ms=12, node_endpoints=nodes)


def _fetch(version: int, endpoints: bool):
    from kafka.protocol.consumer import FetchResponse as F

    FP = F.FetchableTopicResponse.PartitionData
    partitions = [
        FP(
            partition_index=0,
            error_code=0,
            high_watermark=10,
            last_stable_offset=8,
            log_start_offset=0,
            aborted_transactions=[FP.AbortedTransaction(producer_id=5, first_offset=2)],
            preferred_read_replica=-1,
            records=b"r" * 300,
        ),
        FP(
            partition_index=1,
            error_code=6,
            high_watermark=-1,
            last_stable_offset=-1,
            log_start_offset=-1,
            aborted_transactions=None,
            preferred_read_replica=-1,
            records=b"",
            current_leader=FP.LeaderIdAndEpoch(leader_id=2, leader_epoch=4),
        ),
    ]
    topic = F.FetchableTopicResponse(
        topic="orders" if version < 13 else None, topic_id=TOPIC_ID if version >= 13 else None, partitions=partitions
    )
    nodes = [F.NodeEndpoint(node_id=2, host="10.0.0.2", port=9092, rack=None)] if endpoints else []
    return F[version](throttle_time_ms=3, error_code=0, session_id=77, responses=[topic], node_endpoints=nodes)


CASES = [(0, v, _produce) for v in range(10, PRODUCE_MAX_VERSION + 1)] + [
    (1, v, _fetch) for v in range(16, FETCH_MAX_VERSION + 1)
]


def _encoded(message, correlation_id: int = 21) -> bytes:
    message.with_header(correlation_id=correlation_id)
    return bytes(message.encode(header=True))


@pytest.mark.parametrize(
    "api_key,version,build", CASES, ids=[f"{'produce' if k == 0 else 'fetch'}-v{v}" for k, v, _b in CASES]
)
def test_every_version_rewrites_and_redecodes(api_key, version, build):
    frame = _encoded(build(version, endpoints=True))
    addresses = dataplane.response_addresses(api_key, version, frame)
    assert addresses == [(n.host, n.port) for n in build(version, endpoints=True).node_endpoints]
    out = dataplane.rewrite_addresses(api_key, version, frame, MAPPING)
    expected = build(version, endpoints=True)
    for node in expected.node_endpoints:
        node.host, node.port = MAPPING[(node.host, node.port)]
    assert out == _encoded(expected)  # the bytes kafka-python writes for the rewritten response
    cls = type(expected)
    rewritten = cls.decode(out, version=version, header=True).to_dict()
    original = cls.decode(frame, version=version, header=True).to_dict()
    assert [(n["host"], n["port"]) for n in rewritten.pop("node_endpoints")] == [
        MAPPING[(n["host"], n["port"])] for n in original.pop("node_endpoints")
    ]
    assert rewritten == original  # nothing else changed
    assert b"10.0.0." not in out


@pytest.mark.parametrize(
    "api_key,version,build", CASES, ids=[f"{'produce' if k == 0 else 'fetch'}-v{v}" for k, v, _b in CASES]
)
def test_every_version_without_endpoints_is_left_alone(api_key, version, build):
    assert dataplane.rewrite_addresses(api_key, version, _encoded(build(version, endpoints=False)), MAPPING) is None


@pytest.mark.parametrize("version", range(1, PRODUCE_MAX_VERSION + 1))
def test_produce_throttle_patched_in_place_keeps_node_endpoints(version):
    frame = _encoded(_produce(version, endpoints=True))
    patched = patch_throttle_time(0, version, frame, 900)
    assert len(patched) == len(frame)
    decoded = type(_produce(version, True)).decode(patched, version=version, header=True)
    assert decoded.throttle_time_ms == 900
    assert [n.node_id for n in decoded.node_endpoints] == ([3, 2] if version >= 10 else [])


# ---- generated responses and hostile bytes ----------------------------------------------------

_HOSTS = st.sampled_from(list(MAPPING))


@st.composite
def _responses(draw):
    """(api key, version, kafka-python message) with random topics, partitions and endpoints."""
    from kafka.protocol.consumer import FetchResponse as F
    from kafka.protocol.producer import ProduceResponse as P

    api_key = draw(st.sampled_from([0, 1]))
    version = draw(st.integers(1, PRODUCE_MAX_VERSION) if api_key == 0 else st.integers(12, FETCH_MAX_VERSION))
    endpoints = [draw(_HOSTS) for _ in range(draw(st.integers(0, 3)))] if _has_node_endpoints(api_key, version) else []
    topics = []
    for t in range(draw(st.integers(0, 3))):
        n = draw(st.integers(0, 4))
        if api_key == 0:
            PP = P.TopicProduceResponse.PartitionProduceResponse
            parts = [
                PP(
                    index=i,
                    error_code=draw(st.sampled_from([0, 6])),
                    base_offset=draw(st.integers(-1, 2**40)),
                    record_errors=[
                        PP.BatchIndexAndErrorMessage(
                            batch_index=j, batch_index_error_message=draw(st.none() | st.text(max_size=5))
                        )
                        for j in range(draw(st.integers(0, 2)))
                    ],
                    error_message=draw(st.none() | st.text(max_size=8)),
                )
                for i in range(n)
            ]
            topics.append(
                P.TopicProduceResponse(
                    name=f"t{t}" if version < 13 else None,
                    topic_id=TOPIC_ID if version >= 13 else None,
                    partition_responses=parts,
                )
            )
        else:
            FP = F.FetchableTopicResponse.PartitionData
            parts = [
                FP(
                    partition_index=i,
                    error_code=0,
                    high_watermark=1,
                    last_stable_offset=1,
                    log_start_offset=0,
                    aborted_transactions=draw(
                        st.none()
                        | st.lists(
                            st.builds(
                                FP.AbortedTransaction, producer_id=st.integers(0, 9), first_offset=st.integers(0, 9)
                            ),
                            max_size=2,
                        )
                    ),
                    preferred_read_replica=-1,
                    records=draw(st.binary(max_size=300)),
                )
                for i in range(n)
            ]
            topics.append(
                F.FetchableTopicResponse(
                    topic=f"t{t}" if version < 13 else None,
                    topic_id=TOPIC_ID if version >= 13 else None,
                    partitions=parts,
                )
            )
    if api_key == 0:
        nodes = [P.NodeEndpoint(node_id=i, host=h, port=p, rack=None) for i, (h, p) in enumerate(endpoints)]
        return api_key, version, P[version](responses=topics, throttle_time_ms=0, node_endpoints=nodes)
    nodes = [F.NodeEndpoint(node_id=i, host=h, port=p, rack="r") for i, (h, p) in enumerate(endpoints)]
    return (
        api_key,
        version,
        F[version](throttle_time_ms=0, error_code=0, session_id=0, responses=topics, node_endpoints=nodes),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_responses())
def test_generated_responses_rewrite_and_redecode(case):
    api_key, version, message = case
    frame = _encoded(message)
    out = dataplane.rewrite_addresses(api_key, version, frame, MAPPING)
    if not message.node_endpoints:
        assert out is None
    else:
        for node in message.node_endpoints:
            node.host, node.port = MAPPING[(node.host, node.port)]
        assert out == _encoded(message) and b"10.0.0." not in out
    if api_key == 0:  # throttle patched in place where kafka-python reads it
        assert (
            type(message)
            .decode(patch_throttle_time(0, version, frame, 77), version=version, header=True)
            .throttle_time_ms
            == 77
        )


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CASES), st.data())
def test_hostile_bytes_are_malformed_never_another_error(case, data):
    """A broker's bytes, truncated or overwritten anywhere: rewritten, left alone, or malformed
    (ValueError; a Rust panic would surface as another exception and fail the test)."""
    api_key, version, build = case
    frame = bytearray(_encoded(build(version, endpoints=True)))
    for _ in range(data.draw(st.integers(1, 4))):
        frame[data.draw(st.integers(0, len(frame) - 1))] = data.draw(st.integers(0, 255))
    frame = bytes(frame[: data.draw(st.integers(1, len(frame)))])
    patch_throttle_time(api_key, version, frame, 5)  # never fails: an unreadable position is left alone
    try:
        addresses = dataplane.response_addresses(api_key, version, frame)
        if addresses is not None:
            dataplane.rewrite_addresses(api_key, version, frame, {a: ("gw", 1) for a in addresses})
    except ValueError:
        pass
