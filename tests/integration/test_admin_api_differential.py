"""Differential checks: Kafka's own ConfigCommand (same jars as the broker) and AdminApiStore
see the same cluster state and print the same lines (up to kafka-configs' unspecified order)."""

from __future__ import annotations

import time

import pytest

from harness.java import run_config_command
from kconfigs.bootstrap_mode import (
    alter_done_line,
    alter_entity,
    check_alter_keys,
    describe_filter,
    describe_lines,
    quota_update,
)
from kconfigs.errors import KconfigsError
from kconfigs.kafka_texts import TEXTS, dialect_from_option
from kconfigs.model import DEFAULT, QuotaEntity, QuotaRecord
from kconfigs.stores.admin_api import exact_filter, open_admin_store

pytestmark = pytest.mark.integration


def kafka_configs(broker, *args, bootstrap=None, command_config=None):
    argv = ["--bootstrap-server", bootstrap or broker.bootstrap, *args]
    if command_config:
        argv += ["--command-config", command_config]
    return run_config_command(broker.version, argv)


def normalized(lines):
    """kafka-configs prints entities and pairs in HashMap order: compare as sets of pairs."""
    result = set()
    for line in lines:
        head, _, pairs = line.partition(" are ")
        result.add((head, frozenset(pairs.split(", "))))
    return result


def quota_lines(stdout):
    return [line for line in stdout.splitlines() if line.startswith("Quota configs for ")]


def eventually(check, timeout_s=15.0):
    deadline = time.monotonic() + timeout_s
    while not check() and time.monotonic() < deadline:
        time.sleep(0.2)
    return check()


# (types, names, add) as kafka-configs' parser would hand them over
ALTERS = [
    (["users"], ["diff-u1"], {"producer_byte_rate": "1024", "request_percentage": "200"}),
    (["users", "clients"], ["diff-u1", "diff-c1"], {"consumer_byte_rate": "10485760"}),
    (["users", "clients"], ["", ""], {"controller_mutation_rate": "12.5"}),
    (["clients"], ["diff-c2"], {"producer_byte_rate": "2147483647"}),
    (["ips"], ["10.20.30.40"], {"connection_creation_rate": "100"}),
]


def entity_args(types, names):
    args = []
    for entity_type, name in zip(types, names):
        args += ["--entity-type", entity_type] + (["--entity-name", name] if name else ["--entity-default"])
    return args


def test_we_see_what_kafka_configs_wrote_and_print_its_lines(broker, store):
    for types, names, add in ALTERS:
        done = kafka_configs(
            broker, "--alter", *entity_args(types, names), "--add-config", ",".join(f"{k}={v}" for k, v in add.items())
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == alter_done_line(types, names)
    for types, names, add in ALTERS:
        entity = alter_entity(types, names)
        expected = [QuotaRecord(entity, {k: _stored(k, v) for k, v in add.items()})]
        assert eventually(lambda entity=entity, expected=expected: store.describe(exact_filter(entity)) == expected), (
            store.describe(exact_filter(entity))
        )
        theirs = kafka_configs(broker, "--describe", *entity_args(types, names))
        ours = describe_lines(store.describe(describe_filter(types, names)))
        assert normalized(quota_lines(theirs.stdout)) == normalized(ours)


def _stored(key, value):
    from kconfigs.stores.admin_api import canonical_configs

    return canonical_configs({key: value})[key]


def test_kafka_configs_sees_what_we_wrote(broker, store):
    entity = QuotaEntity(user="diff-ours", client_id=DEFAULT)
    store.alter(entity, quota_update({"producer_byte_rate": "4096", "request_percentage": "33.3"}, []))
    args = [
        "--describe",
        "--entity-type",
        "users",
        "--entity-name",
        "diff-ours",
        "--entity-type",
        "clients",
        "--entity-default",
    ]
    expected = {
        (
            "Quota configs for user-principal 'diff-ours', the default client-id",
            frozenset({"producer_byte_rate=4096.0", "request_percentage=33.3"}),
        )
    }
    assert eventually(lambda: normalized(quota_lines(kafka_configs(broker, *args).stdout)) == expected)
    store.alter(entity, quota_update({}, ["producer_byte_rate", "request_percentage"]))
    assert eventually(lambda: quota_lines(kafka_configs(broker, *args).stdout) == [])


def test_same_invalid_delete_message_and_nothing_changed(broker, store):
    entity = QuotaEntity(client_id="diff-del")
    store.alter(entity, quota_update({"consumer_byte_rate": "10"}, []))
    assert eventually(lambda: bool(store.describe(exact_filter(entity))))
    theirs = kafka_configs(
        broker,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "diff-del",
        "--delete-config",
        "producer_byte_rate,consumer_byte_rate,request_percentage",
    )
    assert theirs.returncode == 1
    with pytest.raises(KconfigsError) as ours:
        store.alter(entity, quota_update({}, ["producer_byte_rate", "consumer_byte_rate", "request_percentage"]))
    assert str(ours.value) == "Invalid config(s): producer_byte_rate,request_percentage"
    assert str(ours.value) in theirs.stderr.splitlines()
    assert store.describe(exact_filter(entity)) == [QuotaRecord(entity, {"consumer_byte_rate": "10"})]


@pytest.mark.parametrize(
    "args,types,names,add,delete",
    [
        (
            ["--entity-type", "users", "--entity-name", "u1", "--add-config", "some_config=1,b=2"],
            ["users"],
            ["u1"],
            {"some_config": "1", "b": "2"},
            [],
        ),
        (
            ["--entity-type", "users", "--entity-name", "u1", "--delete-config", "some_config,SCRAM-SHA-256"],
            ["users"],
            ["u1"],
            {},
            ["some_config", "SCRAM-SHA-256"],
        ),
        (
            ["--entity-type", "clients", "--entity-name", "c1", "--add-config", "SCRAM-SHA-256=[password=x]"],
            ["clients"],
            ["c1"],
            {"SCRAM-SHA-256": "password=x"},
            [],
        ),
        (
            [
                "--entity-type",
                "ips",
                "--entity-name",
                "1.2.3.4",
                "--add-config",
                "connection_creation_rate=1,foo=1",
                "--delete-config",
                "bar",
            ],
            ["ips"],
            ["1.2.3.4"],
            {"connection_creation_rate": "1", "foo": "1"},
            ["bar"],
        ),
        (
            ["--entity-type", "users", "--entity-default", "--add-config", "SCRAM-SHA-256=[password=x]"],
            ["users"],
            [""],
            {"SCRAM-SHA-256": "password=x"},
            [],
        ),
    ],
)
def test_tool_side_key_checks_match_kafka_configs(broker, args, types, names, add, delete):
    # The Scala tool (3.x-4.3) prints Scala collections, the Java one (4.4+) joins the keys.
    theirs = kafka_configs(broker, "--alter", *args)
    assert theirs.returncode == 1
    texts = TEXTS[dialect_from_option(broker.version)]
    with pytest.raises(KconfigsError) as ours:
        check_alter_keys(types, names, add, delete, lambda: texts)
    assert str(ours.value) in theirs.stderr.splitlines()


def test_same_command_config_file_works_for_both(broker, store, tmp_path):
    config = tmp_path / "scram.properties"
    config.write_text(
        "security.protocol : SASL_PLAINTEXT\nsasl.mechanism = SCRAM-SHA-512\n"
        "sasl.jaas.config org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '   username="admin" password="admin-secret";\n'
    )
    done = kafka_configs(
        broker,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "diff-sasl",
        "--add-config",
        "consumer_byte_rate=555",
        bootstrap=broker.sasl_bootstrap,
        command_config=str(config),
    )
    assert done.returncode == 0, done.stderr
    sasl_store = open_admin_store(broker.sasl_bootstrap, str(config), timeout_ms=20000)
    try:
        entity = QuotaEntity(user="diff-sasl")
        assert eventually(
            lambda: sasl_store.describe(exact_filter(entity)) == [QuotaRecord(entity, {"consumer_byte_rate": "555"})]
        )
    finally:
        sasl_store.close()
