"""Golden bytes for DescribeClientQuotas (48) and AlterClientQuotas (49), every supported version.

Expected bytes are built here by hand from Kafka's published message schemas
(apache/kafka clients/src/main/resources/common/message/{DescribeClientQuotasRequest,
DescribeClientQuotasResponse,AlterClientQuotasRequest,AlterClientQuotasResponse}.json:
validVersions 0-1, flexibleVersions 1+) and the protocol's primitive encodings
(https://kafka.apache.org/protocol#protocol_types), not produced by the code under test.
"""

import struct

import pytest
from kafka.protocol.admin import AlterClientQuotasResponse, DescribeClientQuotasResponse

from kconfigs.errors import StoreUnavailable, ValidationError
from kconfigs.kafka_admin.messages import (
    SUPPORTED_VERSIONS,
    QuotaOp,
    build_alter_request,
    build_describe_request,
    read_alter_response,
    read_describe_response,
)
from kconfigs.model import DEFAULT, EntityFilter, EntityType, FilterComponent, Match, QuotaEntity, QuotaRecord

VERSIONS = (0, 1)


# -- primitive encoders, straight from the protocol guide --------------------------------
def int8(v):
    return struct.pack(">b", v)


def int16(v):
    return struct.pack(">h", v)


def int32(v):
    return struct.pack(">i", v)


def float64(v):
    return struct.pack(">d", v)


def boolean(v):
    return b"\x01" if v else b"\x00"


def uvarint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def string(s, flexible):
    """STRING / NULLABLE_STRING (int16 length, -1 = null) or COMPACT_* (uvarint length+1, 0 = null)."""
    if s is None:
        return uvarint(0) if flexible else int16(-1)
    data = s.encode()
    return (uvarint(len(data) + 1) if flexible else int16(len(data))) + data


def array(items, flexible):
    if items is None:
        return uvarint(0) if flexible else int32(-1)
    body = b"".join(items)
    return (uvarint(len(items) + 1) if flexible else int32(len(items))) + body


def tags(flexible):
    """An empty tagged-field section: present only in flexible versions."""
    return uvarint(0) if flexible else b""


# -- requests ------------------------------------------------------------------------------
def test_supported_versions_match_the_published_schemas():
    assert SUPPORTED_VERSIONS == {48: (0, 1), 49: (0, 1)}


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_request_encodes_exact_default_and_any_components(version):
    flex = version >= 1
    flt = EntityFilter(
        components=(
            FilterComponent(EntityType.USER, Match.EXACT, "alice"),
            FilterComponent(EntityType.CLIENT_ID, Match.DEFAULT),
            FilterComponent(EntityType.IP, Match.ANY),
        ),
        strict=True,
    )

    def component(entity_type, match_type, match):
        return string(entity_type, flex) + int8(match_type) + string(match, flex) + tags(flex)

    expected = (
        array([component("user", 0, "alice"), component("client-id", 1, None), component("ip", 2, None)], flex)
        + boolean(True)
        + tags(flex)
    )
    assert bytes(build_describe_request(flt, version).encode()) == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_all_request_is_empty_and_not_strict(version):
    flex = version >= 1
    expected = array([], flex) + boolean(False) + tags(flex)
    assert bytes(build_describe_request(EntityFilter((), strict=False), version).encode()) == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_request_header_and_frame(version):
    """Request header v1 (v0 body) / v2 (flexible body): key, version, correlation id, client id."""
    flex = version >= 1
    request = build_describe_request(EntityFilter((), strict=False), version)
    request.with_header(correlation_id=7, client_id="kconfigs")
    header = int16(48) + int16(version) + int32(7) + string("kconfigs", False) + tags(flex)
    body = array([], flex) + boolean(False) + tags(flex)
    assert bytes(request.encode(header=True, framed=True)) == int32(len(header + body)) + header + body


@pytest.mark.parametrize("version", VERSIONS)
def test_alter_request_encodes_set_remove_and_default_entity(version):
    flex = version >= 1
    changes = [
        (
            QuotaEntity(user="u1", client_id=DEFAULT),
            [QuotaOp("producer_byte_rate", 1024.0), QuotaOp("request_percentage", None)],
        ),
        (QuotaEntity(ip="1.2.3.4"), [QuotaOp("connection_creation_rate", 100.0)]),
    ]

    def entity(entity_type, name):
        return string(entity_type, flex) + string(name, flex) + tags(flex)

    def op(key, value, remove):
        return string(key, flex) + float64(value) + boolean(remove) + tags(flex)

    entry1 = (
        array([entity("user", "u1"), entity("client-id", None)], flex)
        + array([op("producer_byte_rate", 1024.0, False), op("request_percentage", 0.0, True)], flex)
        + tags(flex)
    )
    entry2 = (
        array([entity("ip", "1.2.3.4")], flex)
        + array([op("connection_creation_rate", 100.0, False)], flex)
        + tags(flex)
    )
    expected = array([entry1, entry2], flex) + boolean(True) + tags(flex)
    assert bytes(build_alter_request(changes, validate_only=True, version=version).encode()) == expected


# -- responses -----------------------------------------------------------------------------
def describe_response_bytes(version, error_code=0, error_message=None, entries=()):
    flex = version >= 1
    encoded_entries = []
    for entity, values in entries or ():
        ents = [string(t, flex) + string(n, flex) + tags(flex) for t, n in entity]
        vals = [string(k, flex) + float64(v) + tags(flex) for k, v in values]
        encoded_entries.append(array(ents, flex) + array(vals, flex) + tags(flex))
    return (
        int32(0)
        + int16(error_code)
        + string(error_message, flex)
        + array(None if entries is None else encoded_entries, flex)
        + tags(flex)
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_response_decodes_to_records_with_kafka_stored_formatting(version):
    data = describe_response_bytes(
        version,
        entries=[
            ([("user", "alice"), ("client-id", None)], [("producer_byte_rate", 1024.0), ("request_percentage", 200.0)]),
            ([("ip", None)], [("connection_creation_rate", 10.0)]),
            ([("client-id", "c")], [("controller_mutation_rate", 1e7)]),
        ],
    )
    response = DescribeClientQuotasResponse.decode(data, version=version)
    assert read_describe_response(response) == [
        QuotaRecord(
            QuotaEntity(user="alice", client_id=DEFAULT), {"producer_byte_rate": "1024", "request_percentage": "200.0"}
        ),
        QuotaRecord(QuotaEntity(ip=DEFAULT), {"connection_creation_rate": "10"}),
        QuotaRecord(QuotaEntity(client_id="c"), {"controller_mutation_rate": "1.0E7"}),
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_response_null_entries_is_empty(version):
    response = DescribeClientQuotasResponse.decode(describe_response_bytes(version, entries=None), version=version)
    assert read_describe_response(response) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_response_error_is_raised_with_broker_text(version):
    data = describe_response_bytes(version, error_code=31, error_message="Cluster authorization failed.", entries=None)
    response = DescribeClientQuotasResponse.decode(data, version=version)
    with pytest.raises(StoreUnavailable, match="^ClusterAuthorizationException: Cluster authorization failed.$"):
        read_describe_response(response)


@pytest.mark.parametrize("version", VERSIONS)
def test_alter_response_maps_per_entity_errors(version):
    flex = version >= 1

    def entry(code, message, entity):
        ents = [string(t, flex) + string(n, flex) + tags(flex) for t, n in entity]
        return int16(code) + string(message, flex) + array(ents, flex) + tags(flex)

    data = (
        int32(0)
        + array(
            [
                entry(0, None, [("user", "ok")]),
                entry(42, "Quota producer_byte_rate must be greater than 0", [("user", None), ("client-id", "c")]),
                entry(41, None, [("ip", "1.2.3.4")]),
            ],
            flex,
        )
        + tags(flex)
    )
    outcome = read_alter_response(AlterClientQuotasResponse.decode(data, version=version))
    assert [entity for entity, _ in outcome] == [
        QuotaEntity(user="ok"),
        QuotaEntity(user=DEFAULT, client_id="c"),
        QuotaEntity(ip="1.2.3.4"),
    ]
    assert outcome[0][1] is None
    assert isinstance(outcome[1][1], ValidationError)
    assert str(outcome[1][1]) == "Quota producer_byte_rate must be greater than 0"
    assert outcome[2][1].retriable and isinstance(outcome[2][1], StoreUnavailable)
