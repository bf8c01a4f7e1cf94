"""Which quota keys each entity may hold (spec §2.2/§2.3, plus KIP-936 producer_ids_rate for
users only) and how values are checked (stricter than Kafka 2.8's ZooKeeper path, as KRaft is)."""

import pytest

from kconfigs.errors import ValidationError
from kconfigs.keys import check_keys, keys_for, numeric_quotas, parse_value, scram_allowed, validate_configs
from kconfigs.model import DEFAULT, QuotaEntity

CLIENT_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
USER = QuotaEntity(user="alice")
DEFAULT_USER = QuotaEntity(user=DEFAULT)
CLIENT = QuotaEntity(client_id="c")
TUPLE = QuotaEntity(user="alice", client_id="c")
DEFAULT_TUPLE = QuotaEntity(user=DEFAULT, client_id=DEFAULT)
IP = QuotaEntity(ip="1.2.3.4")
DEFAULT_IP = QuotaEntity(ip=DEFAULT)


@pytest.mark.parametrize(
    "entity, keys",
    [
        (USER, CLIENT_KEYS + ("producer_ids_rate",)),
        (DEFAULT_USER, CLIENT_KEYS + ("producer_ids_rate",)),
        (CLIENT, CLIENT_KEYS),
        (QuotaEntity(client_id=DEFAULT), CLIENT_KEYS),
        (TUPLE, CLIENT_KEYS),
        (DEFAULT_TUPLE, CLIENT_KEYS),
        (IP, ("connection_creation_rate",)),
        (DEFAULT_IP, ("connection_creation_rate",)),
    ],
)
def test_valid_keys_per_entity(entity, keys):
    assert keys_for(entity) == keys


@pytest.mark.parametrize(
    "entity, allowed", [(USER, True), (DEFAULT_USER, False), (TUPLE, False), (CLIENT, False), (IP, False)]
)
def test_scram_keys_only_on_a_named_users_own_node(entity, allowed):
    assert scram_allowed(entity) is allowed
    if allowed:
        check_keys(entity, ["SCRAM-SHA-256", "SCRAM-SHA-512"])
    else:
        with pytest.raises(ValidationError, match=r"Unknown Dynamic Configuration: HashSet\(SCRAM-SHA-256\)\.$"):
            check_keys(entity, ["SCRAM-SHA-256"])


@pytest.mark.parametrize("entity", [CLIENT, TUPLE, IP, DEFAULT_TUPLE])
def test_producer_ids_rate_is_for_users_only(entity):
    with pytest.raises(ValidationError, match=r"HashSet\(producer_ids_rate\)"):
        check_keys(entity, ["producer_ids_rate"])


@pytest.mark.parametrize(
    "entity, key", [(USER, "connection_creation_rate"), (IP, "producer_byte_rate"), (CLIENT, "foo")]
)
def test_unknown_key_message_is_kafkas(entity, key):
    with pytest.raises(ValidationError) as err:
        check_keys(entity, [key])
    assert str(err.value) == f"requirement failed: Unknown Dynamic Configuration: HashSet({key})."


def test_unknown_key_message_lists_only_the_unknown_keys():
    with pytest.raises(ValidationError) as err:
        check_keys(CLIENT, ["a", "producer_byte_rate", "c"])
    assert str(err.value) == "requirement failed: Unknown Dynamic Configuration: HashSet(a, c)."


@pytest.mark.parametrize(
    "key, raw, value",
    [
        ("producer_byte_rate", "1024", 1024),
        ("producer_byte_rate", " 1024 ", 1024),
        ("producer_byte_rate", "+7", 7),  # Long.parseLong accepts a sign
        ("consumer_byte_rate", "9223372036854775807", 2**63 - 1),
        ("request_percentage", "50", 50.0),
        ("request_percentage", "1e3", 1000.0),
        ("request_percentage", ".5", 0.5),
        ("request_percentage", "2.5d", 2.5),  # Double.parseDouble's type suffix
        ("controller_mutation_rate", "0.1", 0.1),
        ("producer_ids_rate", "10", 10.0),
        ("connection_creation_rate", "0", 0),  # 0 blocks an ip: Kafka's atLeast(0)
        ("connection_creation_rate", "2147483647", 2**31 - 1),
    ],
)
def test_valid_values_parse_to_numbers_of_the_keys_type(key, raw, value):
    parsed = parse_value(key, raw)
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize(
    "key, raw, message",
    [
        (
            "producer_byte_rate",
            "1.5",
            "Invalid value 1.5 for configuration producer_byte_rate: Not a number of type LONG",
        ),
        (
            "producer_byte_rate",
            "1e3",
            "Invalid value 1e3 for configuration producer_byte_rate: Not a number of type LONG",
        ),
        (
            "producer_byte_rate",
            "abc",
            "Invalid value abc for configuration producer_byte_rate: Not a number of type LONG",
        ),
        ("producer_byte_rate", "", "Invalid value  for configuration producer_byte_rate: Not a number of type LONG"),
        (
            "consumer_byte_rate",
            "9223372036854775808",
            "Invalid value 9223372036854775808 for configuration consumer_byte_rate: Not a number of type LONG",
        ),
        (
            "connection_creation_rate",
            "2147483648",
            "Invalid value 2147483648 for configuration connection_creation_rate: Not a number of type INT",
        ),
        (
            "connection_creation_rate",
            "-1",
            "Invalid value -1 for configuration connection_creation_rate: Value must be at least 0",
        ),
        ("producer_byte_rate", "-5", "Invalid value -5 for configuration producer_byte_rate: Value must be at least 0"),
        (
            "request_percentage",
            "-0.5",
            "Invalid value -0.5 for configuration request_percentage: Value must be at least 0",
        ),
        # Java parses NaN and Infinity (kafka-configs 2.8.2 stores request_percentage=Infinity);
        # kconfigs refuses them, and says why rather than "Not a number".
        (
            "request_percentage",
            "NaN",
            "Invalid value NaN for configuration request_percentage: must be a finite number",
        ),
        (
            "request_percentage",
            "Infinity",
            "Invalid value Infinity for configuration request_percentage: must be a finite number",
        ),
        (
            "controller_mutation_rate",
            "-Infinity",
            "Invalid value -Infinity for configuration controller_mutation_rate: must be a finite number",
        ),
        (
            "request_percentage",
            "1e400",
            "Invalid value 1e400 for configuration request_percentage: must be a finite number",
        ),
        (
            "request_percentage",
            "0x10",
            "Invalid value 0x10 for configuration request_percentage: Not a number of type DOUBLE",
        ),
    ],
)
def test_bad_values_fail_naming_the_key_and_the_value(key, raw, message):
    with pytest.raises(ValidationError) as err:
        parse_value(key, raw)
    assert str(err.value) == message


@pytest.mark.parametrize(
    "key",
    ["producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate", "producer_ids_rate"],
)
def test_zero_is_refused_for_rate_quotas(key):
    with pytest.raises(
        ValidationError, match=f"^Invalid value 0 for configuration {key}: Value must be greater than 0"
    ):
        parse_value(key, "0")


def test_validate_configs_checks_keys_then_values():
    validate_configs(USER, {"producer_byte_rate": "1", "SCRAM-SHA-256": "salt=..."})
    with pytest.raises(ValidationError, match="HashSet"):
        validate_configs(IP, {"producer_byte_rate": "x"})
    with pytest.raises(ValidationError, match="Not a number of type INT"):
        validate_configs(IP, {"connection_creation_rate": "x"})


def test_numeric_quotas_are_ints_for_long_and_int_keys_and_skip_scram():
    quotas = numeric_quotas(
        {
            "producer_byte_rate": "1024",
            "request_percentage": "50",
            "connection_creation_rate": "3",
            "SCRAM-SHA-256": "salt=x",
        }
    )
    assert quotas == {"producer_byte_rate": 1024, "request_percentage": 50.0, "connection_creation_rate": 3}
    assert [type(v) for v in quotas.values()] == [int, float, int]


@pytest.mark.parametrize(
    "keys, printed",
    [
        # Each "printed" was kafka-configs 2.8.2's own message for --add-config with these keys.
        (["zzz", "aaa", "foo"], "aaa, foo, zzz"),
        (["b_x", "Q", "a.b.c", "very-long-config-name", "x1", "A"], "very-long-config-name, A, Q, a.b.c, x1, b_x"),
        (
            [f"k{i}x{chr(97 + i)}" for i in range(14)],  # 14 keys: the Scala set has grown to 32 slots
            "k1xb, k2xc, k3xd, k11xl, k4xe, k10xk, k5xf, k6xg, k7xh, k8xi, k9xj, k13xn, k12xm, k0xa",
        ),
    ],
)
def test_several_unknown_keys_print_in_scala_hash_set_order_like_kafka(keys, printed):
    with pytest.raises(ValidationError) as err:
        check_keys(CLIENT, keys + ["producer_byte_rate"])
    assert str(err.value) == f"requirement failed: Unknown Dynamic Configuration: HashSet({printed})."


def test_double_keys_take_what_javas_parse_double_takes():
    # Double.parseDouble accepts hex floats and a d/f suffix (2.8.2 stores request_percentage=0x1p3).
    assert parse_value("request_percentage", "0x1p3") == 8.0
    assert parse_value("controller_mutation_rate", " 2.5d ") == 2.5


# -- one quota-kind table -------------------------------------------------------------------
# Files allowed to spell a quota key or Kafka quota type as a bare string: the table itself,
# synthetic test data, and the gateway's kafka-python codec (its message class names).
_SPELLERS = {
    "kconfigs/keys.py",
    "spark_analysis/generate.py",
    "enforcement/gateway/codec.py",
}


def test_quota_keys_and_kafka_quota_types_are_spelled_only_in_the_kind_table():
    import ast
    from pathlib import Path

    from kconfigs.keys import QUOTA_KEYS

    root = Path(__file__).resolve().parents[3]
    names = set(QUOTA_KEYS) | {k.metric_group for k in QUOTA_KEYS.values()}
    spelled = sorted(
        f"{path.relative_to(root)}:{node.lineno} {node.value}"
        for folder in ("kconfigs", "enforcement", "spark_analysis")
        for path in (root / folder).rglob("*.py")
        if str(path.relative_to(root)) not in _SPELLERS
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in names
    )
    assert spelled == []


def test_every_kind_names_one_key_a_unit_and_a_kafka_metric_group():
    from kconfigs.keys import QUOTA_KEYS, QUOTA_KINDS
    from kconfigs_analysis.kinds import KIND_QUOTA_KEY, KIND_RATE_UNIT

    assert len(QUOTA_KINDS) == len(QUOTA_KEYS) == 6
    assert {kind: spec.name for kind, spec in QUOTA_KINDS.items()} == KIND_QUOTA_KEY
    assert QUOTA_KINDS["produce"].metric_group == "Produce" and KIND_RATE_UNIT["request"] == "% thread"
    assert all(spec.unit and spec.metric_group for spec in QUOTA_KEYS.values())
