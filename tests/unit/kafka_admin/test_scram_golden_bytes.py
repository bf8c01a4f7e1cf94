"""Golden bytes for DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), v0.

Expected bytes are built by hand from Kafka's message schemas (apache/kafka
clients/src/main/resources/common/message/{Describe,Alter}UserScramCredentials{Request,Response}.json:
validVersions 0, flexibleVersions 0+) and the salted password from RFC 5802's Hi() (PBKDF2),
not produced by the code under test.
"""

import hashlib

import pytest
from kafka.protocol.admin import AlterUserScramCredentialsResponse, DescribeUserScramCredentialsResponse
from wire_encoders import int8, int16, int32, uvarint

from kconfigs.errors import ValidationError
from kconfigs.kafka_admin.scram_messages import (
    build_alter_scram_request,
    build_describe_scram_request,
    read_alter_scram_response,
    read_describe_scram_response,
)
from kconfigs.scram import ScramUpsertion, UserScramDescription


def cstring(s):
    return uvarint(0) if s is None else uvarint(len(s.encode()) + 1) + s.encode()


def cbytes(b):
    return uvarint(len(b) + 1) + b


def carray(items):
    return uvarint(len(items) + 1) + b"".join(items)


TAGS = uvarint(0)


def test_describe_request_lists_the_users_and_empty_means_all():
    assert (
        bytes(build_describe_scram_request(["s1", "ü"], 0).encode())
        == carray([cstring("s1") + TAGS, cstring("ü") + TAGS]) + TAGS
    )
    assert bytes(build_describe_scram_request([], 0).encode()) == carray([]) + TAGS


def test_alter_request_carries_salt_and_pbkdf2_salted_password_never_the_password():
    salt = b"0123456789abcdef"
    request = build_alter_scram_request("s1", [ScramUpsertion("SCRAM-SHA-512", 8192, "pw")], ["SCRAM-SHA-256"], salt, 0)
    salted = hashlib.pbkdf2_hmac("sha512", b"pw", salt, 8192)
    expected = (
        carray([cstring("s1") + int8(1) + TAGS])
        + carray([cstring("s1") + int8(2) + int32(8192) + cbytes(salt) + cbytes(salted) + TAGS])
        + TAGS
    )
    encoded = bytes(request.encode())
    assert encoded == expected
    assert b"pw" not in encoded.replace(salted, b"")


def describe_response(top_error=0, results=()):
    return int32(0) + int16(top_error) + cstring(None) + carray(list(results)) + TAGS


def result(user, code, message, infos):
    return cstring(user) + int16(code) + cstring(message) + carray([int8(m) + int32(i) + TAGS for m, i in infos]) + TAGS


def test_describe_response_keeps_broker_order_and_drops_unknown_users():
    data = describe_response(
        results=[
            result("s2", 0, None, [(1, 8192), (2, 4096)]),
            result("nosuch", 91, "Attempt to describe a user credential that does not exist", []),
            result("s1", 0, None, [(1, 4096)]),
        ]
    )
    described = read_describe_scram_response(DescribeUserScramCredentialsResponse.decode(data, version=0))
    assert described == [
        UserScramDescription("s2", (("SCRAM-SHA-256", 8192), ("SCRAM-SHA-512", 4096))),
        UserScramDescription("s1", (("SCRAM-SHA-256", 4096),)),
    ]


def test_alter_response_error_is_raised_with_the_brokers_text():
    data = int32(0) + carray([cstring("s1") + int16(93) + cstring("Too many iterations") + TAGS]) + TAGS
    with pytest.raises(ValidationError) as err:
        read_alter_scram_response(AlterUserScramCredentialsResponse.decode(data, version=0))
    assert str(err.value) == "Too many iterations"
    ok = int32(0) + carray([cstring("s1") + int16(0) + cstring(None) + TAGS]) + TAGS
    assert read_alter_scram_response(AlterUserScramCredentialsResponse.decode(ok, version=0)) is None
