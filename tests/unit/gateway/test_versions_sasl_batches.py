"""In the data plane (``dataplane/``, through ``_native.testing``), with the control plane's
version ceilings and throttle table as ``kconfigs serve`` hands them over: ApiVersions capping,
SASL principal observation, producer ids from batch headers, throttle patching."""

import struct

import pytest

from kconfigs_enforcement._native import testing as dataplane
from kconfigs_enforcement.gateway import codec
from kconfigs_enforcement.gateway.native_plane import throttle_first_versions, version_ceilings

ANONYMOUS = dataplane.ANONYMOUS
CEILINGS = version_ceilings()
THROTTLE_FIRST = set(throttle_first_versions())


def rewrite_api_versions_response(frame, version, owned):
    return dataplane.rewrite_api_versions(frame, version, CEILINGS, owned)


def cap_ranges(ranges, owned):
    return dataplane.cap_ranges(ranges, CEILINGS, owned)


def patch_throttle_time(api_key, version, frame, throttle_ms):
    return dataplane.patch_throttle(api_key, version, frame, throttle_ms, THROTTLE_FIRST)


def _decode_response(api_key, version, frame):
    return codec.response_class(api_key)[version].decode(frame, header=True)


def _api_versions_frame(version, ranges, error_code=0):
    from kafka.protocol.metadata import ApiVersionsResponse as A

    response = A[version](
        error_code=error_code,
        api_keys=[A.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in ranges],
    )
    response.with_header(correlation_id=4)
    return bytes(response.encode(header=True))


def test_api_versions_caps_decoded_and_address_bearing_apis():
    # a broker newer than the gateway: Produce v14 / Fetch v19 layouts are unknown, so capped
    broker = [(0, 3, 14), (1, 4, 19), (3, 0, 14), (10, 0, 6), (18, 0, 4), (68, 0, 1), (60, 0, 2)]
    out = rewrite_api_versions_response(_api_versions_frame(3, broker), 3, [])
    got = {(k.api_key, k.min_version, k.max_version) for k in _decode_response(18, 3, out).api_keys}
    assert got == {(0, 3, 13), (1, 4, 18), (3, 0, 13), (10, 0, 6), (18, 0, 4), (68, 0, 1), (60, 0, 2)}


def test_share_group_apis_of_kafka_4_3_are_kept_and_a_later_share_fetch_is_capped():
    # Kafka 4.3.1's share-group ranges: ShareFetch / ShareAcknowledge v1..v2 carry NodeEndpoints,
    # which the data plane rewrites up to v2; the rest carry no address and keep the broker's range
    broker = [(76, 1, 1), (77, 1, 1), (78, 1, 2), (79, 1, 2), (90, 0, 0), (91, 0, 0), (92, 0, 0)]
    out = rewrite_api_versions_response(_api_versions_frame(3, broker), 3, [])
    got = {(k.api_key, k.min_version, k.max_version) for k in _decode_response(18, 3, out).api_keys}
    assert got == set(broker)
    # a broker with a v3 the gateway cannot lay out
    out = rewrite_api_versions_response(_api_versions_frame(3, [(78, 1, 3), (79, 1, 3), (76, 1, 2)]), 3, [])
    got = {(k.api_key, k.min_version, k.max_version) for k in _decode_response(18, 3, out).api_keys}
    assert got == {(78, 1, 2), (79, 1, 2), (76, 1, 2)}


def test_describe_quorum_is_kept_up_to_the_decodable_v2_and_undecoded_apis_kept():
    # DescribeQuorum v2's controller listeners are removed by the data plane, so v2 is offered;
    # a v3 it could not lay out is not. InitProducerId is never decoded, so a newer broker's range
    # passes unchanged
    out = rewrite_api_versions_response(_api_versions_frame(3, [(55, 0, 3), (22, 0, 7)]), 3, [])
    got = {(k.api_key, k.min_version, k.max_version) for k in _decode_response(18, 3, out).api_keys}
    assert got == {(55, 0, 2), (22, 0, 7)}


def test_api_versions_of_kafka_4_3_keep_produce_and_fetch_with_node_endpoints():
    # Kafka 4.3.1's ranges: KIP-890 transactions (transaction.version=2) need Produce v12+
    broker = [(0, 3, 13), (1, 4, 18)]
    out = rewrite_api_versions_response(_api_versions_frame(3, broker), 3, [])
    got = {(k.api_key, k.min_version, k.max_version) for k in _decode_response(18, 3, out).api_keys}
    assert got == {(0, 3, 13), (1, 4, 18)}


def test_api_versions_v5_of_kafka_4_4_is_kept_and_its_response_read_as_v4():
    # Kafka 4.4.0 answers ApiVersions up to v5; a v5 response has v4's layout
    broker = [(0, 3, 13), (1, 4, 18), (18, 0, 5), (78, 1, 1)]
    out = rewrite_api_versions_response(_api_versions_frame(4, broker), 5, [])
    got = {(k.api_key, k.min_version, k.max_version) for k in _decode_response(18, 4, out).api_keys}
    assert got == {(0, 3, 13), (1, 4, 18), (18, 0, 5), (78, 1, 1)}
    # the gateway answers an ApiVersions request beyond v5 itself, listing v5 as its maximum
    assert 18 not in CEILINGS


def test_api_versions_header_stays_v0_even_for_flexible_bodies():
    out = rewrite_api_versions_response(_api_versions_frame(3, [(18, 0, 4)]), 3, [])
    assert out[:4] == b"\x00\x00\x00\x04" and out[4:6] == b"\x00\x00"  # no header tag byte: error_code follows


def test_gateway_owned_apis_are_added():
    owned = [(48, 0, 1), (49, 0, 1)]
    assert [r[0] for r in cap_ranges([(0, 3, 11)], owned)] == [0, 48, 49]


def test_api_removed_when_broker_minimum_exceeds_our_cap():
    assert cap_ranges([(0, 14, 15)], []) == []


def test_unsupported_version_answer_golden_bytes():
    # v0: correlation 9 | error 35 | [ApiVersions 18: 0..4]
    assert dataplane.unsupported_api_versions(9, 4) == bytes.fromhex("00000009002300000001001200000004")


def test_plain_and_scram_identities():
    assert dataplane.plain_authcid(b"\x00alice\x00secret") == "alice"
    assert dataplane.plain_authcid(b"alice\x00alice\x00secret") == "alice"
    assert dataplane.scram_username(b"n,,n=bob=2Cjr=3D,r=abc") == "bob,jr="
    with pytest.raises(ValueError, match="malformed SASL/PLAIN message"):
        dataplane.plain_authcid(b"nonsense")


def _handshake(mechanism, version=1):
    from kafka.protocol.sasl import SaslHandshakeRequest as H

    request = H[version](mechanism=mechanism)
    request.with_header(correlation_id=1, client_id="c")
    return bytes(request.encode(header=True))


def _authenticate(auth_bytes, version=1):
    from kafka.protocol.sasl import SaslAuthenticateRequest as A

    request = A[version](auth_bytes=auth_bytes)
    request.with_header(correlation_id=2, client_id="c")
    return bytes(request.encode(header=True))


def test_principal_committed_only_after_scram_final_success():
    state = dataplane.SaslObserver()
    state.on_request(17, 1, _handshake("SCRAM-SHA-256"))
    state.on_handshake_response(0)
    state.on_request(36, 1, _authenticate(b"n,,n=carol,r=xyz"))
    assert not state.on_authenticate_response(0)  # server-first: not done yet
    assert state.principal == ANONYMOUS
    state.on_request(36, 1, _authenticate(b"c=biws,r=xyz,p=proof"))
    assert state.on_authenticate_response(0)
    assert (state.principal, state.authenticated) == ("carol", True)


def test_failed_plain_keeps_anonymous():
    state = dataplane.SaslObserver()
    state.on_request(17, 1, _handshake("PLAIN"))
    state.on_request(36, 1, _authenticate(b"\x00mallory\x00wrong"))
    assert not state.on_authenticate_response(58)
    assert state.principal == ANONYMOUS and not state.authenticated


def test_handshake_v0_is_rejected():
    with pytest.raises(ValueError, match="SaslHandshake v0"):
        dataplane.SaslObserver().on_request(17, 0, _handshake("PLAIN", version=0))


def _batch(producer_id, magic=2, payload=b"r" * 10):
    body = struct.pack(">ibIhiqqqhii", 0, magic, 0, 0, 0, 0, 0, producer_id, 0, 0, 1) + payload
    return struct.pack(">qi", 0, len(body)) + body


def test_producer_ids_from_concatenated_batches():
    assert dataplane.batch_producer_ids(_batch(7) + _batch(9) + _batch(-1)) == [7, 9]
    assert dataplane.batch_producer_ids(_batch(5, magic=1)) == []
    assert dataplane.batch_producer_ids(b"") == []
    assert dataplane.batch_producer_ids(_batch(7)[:30]) == []


def test_producer_ids_from_a_kafka_python_produce_request():
    from kafka.protocol.producer import ProduceRequest as P

    topic = P.TopicProduceData(
        name="t", partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=_batch(42))]
    )
    request = P[9](acks=1, timeout_ms=100, topic_data=[topic])
    request.with_header(correlation_id=1, client_id="c")
    assert dataplane.produce_request_producer_ids(9, bytes(request.encode(header=True))) == [42]


def test_throttle_patched_at_first_field_of_flexible_fetch():
    from kafka.protocol.consumer import FetchResponse as F

    response = F[12](throttle_time_ms=5, error_code=0, session_id=0, responses=[])
    response.with_header(correlation_id=2)
    frame = bytes(response.encode(header=True))
    patched = patch_throttle_time(1, 12, frame, 700)
    assert _decode_response(1, 12, patched).throttle_time_ms == 700
    assert patched[:5] == frame[:5] and patched[9:] == frame[9:]
    assert patch_throttle_time(1, 12, patched, 300) == patched  # broker's larger value kept


def test_throttle_patched_in_produce_after_responses_array():
    from kafka.protocol.producer import ProduceResponse as P

    response = P[9](responses=[], throttle_time_ms=0)
    response.with_header(correlation_id=2)
    out = patch_throttle_time(0, 9, bytes(response.encode(header=True)), 1234)
    assert _decode_response(0, 9, out).throttle_time_ms == 1234


def test_produce_v0_has_no_throttle_field_and_is_unchanged():
    from kafka.protocol.producer import ProduceResponse as P

    response = P[0](responses=[])
    response.with_header(correlation_id=2)
    frame = bytes(response.encode(header=True))
    assert patch_throttle_time(0, 0, frame, 50) == frame


@pytest.mark.parametrize("version", [7, 11, 12, 16])
def test_throttled_fetch_is_answered_empty_with_the_session_as_a_broker_answers_it(version):
    """KafkaApis getThrottledResponse: no data, throttle_time_ms, the fetch session kept."""
    from kafka.protocol.consumer import FetchResponse as F

    FP = F.FetchableTopicResponse.PartitionData
    partition = FP(partition_index=0, error_code=0, high_watermark=9, records=b"r" * 100)
    topic = F.FetchableTopicResponse(topic="t", topic_id=None, partitions=[partition])
    response = F[version](throttle_time_ms=0, error_code=0, session_id=77, responses=[topic])
    response.with_header(correlation_id=5)
    out = dataplane.throttled_fetch_response(version, bytes(response.encode(header=True)), 1500)
    decoded = F[version].decode(out, header=True)
    assert (decoded.throttle_time_ms, decoded.error_code, decoded.session_id, decoded.responses) == (1500, 0, 77, [])
    assert out[:4] == (5).to_bytes(4, "big")  # the same correlation id


def test_fetch_with_a_top_level_error_is_not_replaced():
    from kafka.protocol.consumer import FetchResponse as F

    response = F[12](throttle_time_ms=0, error_code=70, session_id=0, responses=[])  # FETCH_SESSION_ID_NOT_FOUND
    response.with_header(correlation_id=5)
    assert dataplane.throttled_fetch_response(12, bytes(response.encode(header=True)), 1500) is None
