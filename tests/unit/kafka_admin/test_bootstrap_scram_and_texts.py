"""Pure parts of --bootstrap-server SCRAM and of the per-line texts; vectors are what real
kafka-configs 3.9.2 / 4.3.1 printed (the integration differential tests generate more)."""

import pytest

from kconfigs.bootstrap_mode import check_key_characters, check_no_repeated_key
from kconfigs.bootstrap_scram import (
    check_keyless_alter,
    check_passwords,
    describes_scram,
    scram_describe_lines,
    scram_upsertion,
)
from kconfigs.errors import KconfigsError, UsageError, ValidationError
from kconfigs.jvm_order import java_properties_order
from kconfigs.kafka_admin.error_codes import error_for_code
from kconfigs.kafka_texts import TEXTS, Dialect, dialect_from_api_versions, dialect_from_option
from kconfigs.model import DEFAULT, QuotaEntity
from kconfigs.scram import ScramUpsertion, UserScramDescription


@pytest.mark.parametrize(
    "value, expected",
    [
        ("iterations=8192,password=pw", ScramUpsertion("SCRAM-SHA-256", 8192, "pw")),
        ("password=a=b,c", ScramUpsertion("SCRAM-SHA-256", 4096, "a=b,c")),
        ("iterations=-1,password=x", ScramUpsertion("SCRAM-SHA-256", 4096, "x")),
        ("password=", ScramUpsertion("SCRAM-SHA-256", 4096, "")),
    ],
)
def test_scram_values_parse_as_configcommand_does(value, expected):
    assert scram_upsertion("SCRAM-SHA-256", value) == expected


@pytest.mark.parametrize(
    "value, message",
    [
        ("iterations=x,password=a", "Invalid credential property SCRAM_SHA_512=iterations=x,password=a"),
        ("pass=a", "Invalid credential property SCRAM_SHA_512=pass=a"),
        ("password=a\rb", "Invalid credential property SCRAM_SHA_512=password=a\rb"),  # Java's "." stops at \r
        ("iterations=100,password=a", "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-512"),
        ("iterations=-5,password=a", "Iterations -5 is less than the minimum 4096 required for SCRAM-SHA-512"),
        ("iterations=,password=a", 'For input string: ""'),
        ("iterations=99999999999,password=a", 'For input string: "99999999999"'),
    ],
)
def test_bad_scram_values_fail_with_kafkas_text(value, message):
    with pytest.raises(KconfigsError) as err:
        scram_upsertion("SCRAM-SHA-512", value)
    assert str(err.value) == message


def test_empty_password_is_refused_after_every_value_parsed():
    with pytest.raises(ValidationError, match="^Password must not be empty$"):
        check_passwords([ScramUpsertion("SCRAM-SHA-256", 4096, "x"), ScramUpsertion("SCRAM-SHA-512", 4096, "")])


def test_scram_lines_only_for_named_users_without_clients():
    assert describes_scram(["users"], []) and describes_scram(["users"], ["s1"])
    assert not describes_scram(["users"], [""]) and not describes_scram(["users", "clients"], ["u"])
    assert not describes_scram(["clients"], ["c"]) and not describes_scram(["ips"], [])


def test_scram_describe_lines():
    error = error_for_code(92, "Cannot describe SCRAM credentials for the same user twice in a single request")
    lines = scram_describe_lines(
        [
            UserScramDescription("s1", (("SCRAM-SHA-256", 8192), ("SCRAM-SHA-512", 4096))),
            UserScramDescription("s2", error=error),
        ]
    )
    assert lines == [
        "SCRAM credential configs for user-principal 's1' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096",
        "Error retrieving SCRAM credential configs for user-principal 's2': ExecutionException: "
        "org.apache.kafka.common.errors.DuplicateResourceException: Cannot describe SCRAM credentials for the "
        "same user twice in a single request",
    ]


def test_keyless_alter_of_a_pair_fails_like_kafkas_illegal_state():
    check_keyless_alter(["u"])
    check_keyless_alter([""])
    with pytest.raises(ValidationError) as err:
        check_keyless_alter(["ce", "ue"])
    assert (
        str(err.value)
        == "Altering user SCRAM credentials should never occur for more zero or multiple users: List(ce, ue)"
    )


@pytest.mark.parametrize(
    "entity, text",
    [
        (QuotaEntity(user="u1"), "{user=u1}"),
        (QuotaEntity(user="s2", client_id="c"), "{client-id=c, user=s2}"),
        (QuotaEntity(user=DEFAULT, client_id="c"), "{client-id=c, user=null}"),
        (QuotaEntity(ip="1.2.3.4"), "{ip=1.2.3.4}"),
    ],
)
def test_a_key_named_twice_is_the_controllers_refusal(entity, text):
    check_no_repeated_key(entity, {"producer_byte_rate": "1"}, ["consumer_byte_rate"])
    for add, delete in (({"k": "1"}, ["k"]), ({}, ["k", "k"])):
        with pytest.raises(ValidationError) as err:
            check_no_repeated_key(entity, add, delete)
        assert str(err.value) == f"Ignoring duplicate entity ClientQuotaEntity(entries={text})"


def test_key_characters_per_line_and_in_properties_order():
    three, four = (lambda: TEXTS[Dialect.KAFKA_3]), (lambda: TEXTS[Dialect.KAFKA_4])
    check_key_characters({"producer_byte_rate": "1", "a.b-c_D9": "2"}, lambda: pytest.fail("not needed"))
    check_key_characters({"a$b": "1"}, four)
    for texts in (three, four):
        with pytest.raises(UsageError) as err:
            check_key_characters({"producer_byte_rate": "1", "a$b": "1", "c d": "2"}, texts)
        assert str(err.value) == "Invalid character found for config key: c d"  # 3.9.2 and 4.3.1
    assert java_properties_order(["producer_byte_rate", "a$b", "c d"]) == ["c d", "producer_byte_rate", "a$b"]


def test_the_kafka_line_comes_from_fetchs_minimum_and_api_versions_maximum():
    assert dialect_from_api_versions({1: (0, 17), 18: (0, 4), 48: (0, 1)}) is Dialect.KAFKA_3  # 3.9.2
    assert dialect_from_api_versions({1: (4, 18), 18: (0, 4), 48: (0, 1)}) is Dialect.KAFKA_4  # 4.3.1
    assert dialect_from_api_versions({1: (4, 18), 18: (0, 5), 48: (0, 1)}) is Dialect.KAFKA_4_4  # 4.4.0
    assert dialect_from_api_versions({48: (0, 1)}) is Dialect.KAFKA_3


@pytest.mark.parametrize(
    "text, dialect",
    [
        ("3", Dialect.KAFKA_3),
        ("3.9.2", Dialect.KAFKA_3),
        ("4", Dialect.KAFKA_4),
        ("4.1", Dialect.KAFKA_4),
        ("4.3.1", Dialect.KAFKA_4),
        ("4.4", Dialect.KAFKA_4_4),
        ("4.10.0", Dialect.KAFKA_4_4),
        ("5.0", Dialect.KAFKA_4_4),
    ],
)
def test_kafka_version_option(text, dialect):
    assert dialect_from_option(text) is dialect


@pytest.mark.parametrize("text", ["2.8", "", "latest", "3.x"])
def test_kafka_version_option_refuses_other_lines(text):
    with pytest.raises(UsageError, match="--kafka-version must be a Kafka 3.x or 4.x version"):
        dialect_from_option(text)
