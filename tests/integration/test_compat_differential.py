"""kconfigs vs real kafka-configs 2.8.2 on the same ZooKeeper (one chroot per tool and test).

Each scenario runs the same command lines through both tools and compares: exit codes, the error
message (kafka-configs' first stderr line, or the exception message of its stack-trace form), stdout
lines (minus Kafka's deprecation warning; key and line order normalised where Kafka's comes from a
hash map or ZooKeeper's child order), the znodes under /config (parsed JSON), and the change
notifications. Then each tool describes what the other wrote.

Deliberate differences (README) are normalised explicitly, nowhere else:
- kconfigs removes an emptied quota znode as Kafka 3.5+ does; 2.8.2 keeps ``{"config":{}}``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

import pytest
from compat_support import (
    config_tree,
    normalised_lines,
    notifications,
    run_kafka_configs,
    run_kconfigs,
    without_empty_leaves,
)
from kazoo.client import KazooClient

TOOLS = {"kafka": run_kafka_configs, "kconfigs": run_kconfigs}


@pytest.fixture
def chroots(zk_client, zk_connect):
    """Two sibling chroots, one per tool, and a kazoo client on each."""
    clients = {}
    try:
        for tool in TOOLS:
            zk_client.ensure_path(f"/{tool}/brokers")  # a Kafka-like chroot: no kconfigs warning
            client = KazooClient(hosts=f"{zk_connect}/{tool}", timeout=10)
            client.start(timeout=30)
            clients[tool] = client
        yield {tool: (f"{zk_connect}/{tool}", client) for tool, client in clients.items()}
    finally:
        for client in clients.values():
            client.stop()
            client.close()


def run_both(chroots, commands):
    """Run every command through both tools, each on its own chroot; returns {tool: [ToolRun]}."""
    return {
        tool: [runner(["--zookeeper", chroots[tool][0], *cmd]) for cmd in commands] for tool, runner in TOOLS.items()
    }


def assert_same_results(commands, results):
    for cmd, kafka, ours in zip(commands, results["kafka"], results["kconfigs"]):
        assert (ours.rc, ours.error) == (kafka.rc, kafka.error), (cmd, kafka.stderr, ours.stderr)
        assert normalised_lines(ours.stdout) == normalised_lines(kafka.stdout), cmd


def assert_same_state(chroots, emptied=False):
    trees = {tool: config_tree(client) for tool, (_, client) in chroots.items()}
    if emptied:
        trees["kafka"] = without_empty_leaves(trees["kafka"])
    assert trees["kconfigs"] == trees["kafka"]
    changes = {tool: notifications(client) for tool, (_, client) in chroots.items()}
    assert changes["kconfigs"] == changes["kafka"]
    assert all(n["version"] == 2 for n in changes["kafka"])
    return trees


def cross_describe(chroots, commands):
    """Each tool describes the other's tree; the output must equal the owner's own describe."""
    for cmd in commands:
        kafka_on_ours = run_kafka_configs(["--zookeeper", chroots["kconfigs"][0], *cmd])
        ours_on_kafka = run_kconfigs(["--zookeeper", chroots["kafka"][0], *cmd])
        ours_on_ours = run_kconfigs(["--zookeeper", chroots["kconfigs"][0], *cmd])
        assert normalised_lines(kafka_on_ours.stdout) == normalised_lines(ours_on_ours.stdout), cmd
        assert kafka_on_ours.rc == ours_on_kafka.rc == 0
        yield ours_on_kafka


USERS_AND_TUPLES = [
    [
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "CN=user1",
        "--add-config",
        "producer_byte_rate=1024,consumer_byte_rate=2048",
    ],
    ["--alter", "--user", "a b", "--client", "client1?@%", "--add-config", "request_percentage=50"],
    [
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "client1",
        "--entity-type",
        "users",
        "--entity-name",
        "CN=user1",
        "--add-config",
        "controller_mutation_rate=10",
    ],
    ["--alter", "--user", "<default>", "--add-config", "producer_byte_rate=5"],
    [
        "--alter",
        "--user-defaults",
        "--client-defaults",
        "--add-config",
        "consumer_byte_rate = 7 , producer_byte_rate=8",
    ],
    ["--alter", "--entity-type", "users", "--entity-default", "--add-config", "request_percentage=200"],
    ["--describe", "--entity-type", "users"],
    ["--describe", "--entity-type", "users", "--entity-type", "clients"],
    ["--describe", "--user", "CN=user1"],
]


def test_users_tuples_defaults_and_sanitized_names(chroots):
    results = run_both(chroots, USERS_AND_TUPLES)
    assert_same_results(USERS_AND_TUPLES, results)
    trees = assert_same_state(chroots)
    assert trees["kafka"]["/config/users/CN%3Duser1/clients/client1"] == {
        "version": 1,
        "config": {"controller_mutation_rate": "10"},
    }
    assert "/config/users/a%20b/clients/client1%3F%40%25" in trees["kafka"]
    assert "/config/users/%3Cdefault%3E" in trees["kafka"]
    listing = ["--describe", "--entity-type", "users", "--entity-type", "clients"]
    ours_on_kafka = list(cross_describe(chroots, [listing]))
    assert normalised_lines(ours_on_kafka[0].stdout) == normalised_lines(results["kafka"][7].stdout)


CLIENTS_IPS_AND_DELETES = [
    ["--alter", "--client-defaults", "--add-config", "producer_byte_rate=100,consumer_byte_rate=200"],
    ["--alter", "--entity-type", "clients", "--entity-name", "c1", "--add-config-file", "{props}"],
    ["--alter", "--ip", "1.2.3.4", "--add-config", "connection_creation_rate=10"],
    ["--alter", "--ip-defaults", "--add-config", "connection_creation_rate=20"],
    ["--alter", "--client-defaults", "--delete-config", "consumer_byte_rate"],
    [
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "c1",
        "--delete-config",
        "missing_config1, missing_config2",
    ],
    [
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "c1",
        "--add-config",
        "consumer_byte_rate=1",
        "--delete-config",
        "request_percentage",
    ],
    ["--describe", "--entity-type", "clients"],
    ["--describe", "--entity-type", "ips"],
    ["--describe", "--client", "nosuch"],
    ["--describe", "--ip", "<default>"],
]


def test_clients_ips_add_config_file_and_deletes(chroots, tmp_path):
    props = tmp_path / "quota.properties"
    props.write_text("# quotas\nproducer_byte_rate = 300\nrequest_percentage=12.5\n")
    commands = [[str(props) if a == "{props}" else a for a in cmd] for cmd in CLIENTS_IPS_AND_DELETES]
    results = run_both(chroots, commands)
    assert_same_results(commands, results)
    assert results["kafka"][5].error == "Invalid config(s): missing_config1,missing_config2"
    assert results["kafka"][9].stdout == ["Configs for client-id 'nosuch' are "]
    trees = assert_same_state(chroots)
    assert trees["kafka"]["/config/clients/c1"]["config"] == {"producer_byte_rate": "300", "consumer_byte_rate": "1"}
    list(cross_describe(chroots, [["--describe", "--entity-type", "clients"]]))


EMPTYING = [
    ["--alter", "--user", "u1", "--client", "c1", "--add-config", "producer_byte_rate=1"],
    ["--alter", "--user", "u1", "--client", "c1", "--delete-config", "producer_byte_rate"],
    ["--alter", "--ip", "::1", "--add-config", "connection_creation_rate=3"],
    ["--alter", "--ip", "::1", "--delete-config", "connection_creation_rate"],
    ["--describe", "--entity-type", "users", "--entity-type", "clients"],
]


def test_emptied_entities_are_removed_where_kafka_2_8_keeps_empty_nodes(chroots):
    results = run_both(chroots, EMPTYING)
    kafka_tree = config_tree(chroots["kafka"][1])
    assert kafka_tree["/config/users/u1/clients/c1"] == {"version": 1, "config": {}}  # 2.8 keeps it
    assert "/config/users/u1" not in config_tree(chroots["kconfigs"][1])  # 3.5+: gone with its parents
    assert_same_state(chroots, emptied=True)
    for cmd, kafka, ours in zip(EMPTYING[:4], results["kafka"], results["kconfigs"]):
        assert (ours.rc, ours.stdout) == (kafka.rc, kafka.stdout), cmd
    # Listing tuples: 2.8 still prints the empty tuple it kept; kconfigs has nothing left to print.
    assert results["kafka"][4].stdout == ["Configs for user-principal 'u1', client-id 'c1' are "]
    assert results["kconfigs"][4].stdout == []


ERRORS = [
    ["--alter", "--user", "u", "--add-config", "foo=1"],
    ["--alter", "--ip", "1.2.3.4", "--add-config", "producer_byte_rate=1"],
    ["--alter", "--user", "u", "--add-config", "producer_byte_rate=1.5"],
    ["--alter", "--ip", "1.2.3.4", "--add-config", "connection_creation_rate=-1"],
    ["--alter", "--ip", "999.1.1.1", "--add-config", "connection_creation_rate=1"],
    ["--alter", "--user", "u", "--add-config", "a=[b,c,d=e"],
    ["--describe", "--entity-type", "users", "--entity-type", "ips"],
    [
        "--alter",
        "--entity-type",
        "users",
        "--entity-type",
        "clients",
        "--entity-name",
        "u",
        "--add-config",
        "producer_byte_rate=1",
    ],
    ["--alter", "--user-defaults", "--add-config", "SCRAM-SHA-256=[password=x]"],
    ["--alter", "--user", "u", "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]"],
    ["--describe", "--entity-name", "A", "--entity-type", "users", "--client", "B"],
    ["--alter", "--user", "u"],
    ["--alter", "--user", "."],
]


def test_errors_match_and_write_nothing(chroots):
    commands = ERRORS[:-1] + [ERRORS[-1] + ["--add-config", "producer_byte_rate=1"]]
    results = run_both(chroots, commands)
    for cmd, kafka, ours in zip(commands, results["kafka"], results["kconfigs"]):
        assert kafka.rc == ours.rc == 1, cmd
        assert ours.error == kafka.error, (cmd, kafka.stderr)
        assert "Traceback" not in ours.stderr
        assert ours.stdout == kafka.stdout == [], cmd
    assert results["kafka"][0].error == "requirement failed: Unknown Dynamic Configuration: HashSet(foo)."
    assert results["kafka"][9].error == "Iterations 100 is less than the minimum 4096 required for SCRAM_SHA_256"
    assert config_tree(chroots["kconfigs"][1]) == {}
    assert notifications(chroots["kconfigs"][1]) == notifications(chroots["kafka"][1]) == []


def _credential(value):
    match = re.fullmatch(r"salt=([^,]+),stored_key=([^,]+),server_key=([^,]+),iterations=(\d+)", value)
    assert match, value
    return [base64.b64decode(g) for g in match.groups()[:3]] + [int(match.group(4))]


def _verifies(value, hash_name, password):
    salt, stored_key, server_key, iterations = _credential(value)
    salted = hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    return (
        hashlib.new(hash_name, client_key).digest() == stored_key
        and hmac.new(salted, b"Server Key", hash_name).digest() == server_key
    )


SCRAM = [
    [
        "--alter",
        "--user",
        "scram1",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=abc, def],SCRAM-SHA-512=[password=1234=abc],producer_byte_rate=10",
    ],
    ["--alter", "--user", "scram1", "--delete-config", "SCRAM-SHA-256"],
]


def test_scram_credentials_have_kafkas_format_and_verify_both_ways(chroots):
    results = run_both(chroots, SCRAM)
    for kafka, ours in zip(results["kafka"], results["kconfigs"]):
        assert (ours.rc, ours.stdout) == (kafka.rc, kafka.stdout)
    configs = {tool: config_tree(client)["/config/users/scram1"]["config"] for tool, (_, client) in chroots.items()}
    assert set(configs["kconfigs"]) == set(configs["kafka"]) == {"SCRAM-SHA-512", "producer_byte_rate"}
    for tool in TOOLS:
        assert _credential(configs[tool]["SCRAM-SHA-512"])[3] == 4096
        assert _verifies(configs[tool]["SCRAM-SHA-512"], "sha512", b"1234=abc")
    # Kafka reads kconfigs' credentials back exactly as kconfigs stored them.
    kafka_view = run_kafka_configs(["--zookeeper", chroots["kconfigs"][0], "--describe", "--user", "scram1"])
    stored = ",".join(f"{k}={v}" for k, v in configs["kconfigs"].items())
    assert normalised_lines(kafka_view.stdout) == normalised_lines(
        [f"Configs for user-principal 'scram1' are {stored}"]
    )


def test_kafka_merges_into_what_kconfigs_wrote_and_back(chroots):
    ours, _ = chroots["kconfigs"]
    assert (
        run_kconfigs(
            ["--zookeeper", ours, "--alter", "--user", "u", "--client", "c", "--add-config", "producer_byte_rate=1"]
        ).rc
        == 0
    )
    assert (
        run_kafka_configs(
            ["--zookeeper", ours, "--alter", "--user", "u", "--client", "c", "--add-config", "consumer_byte_rate=2"]
        ).rc
        == 0
    )
    assert (
        run_kconfigs(
            ["--zookeeper", ours, "--alter", "--user", "u", "--client", "c", "--add-config", "request_percentage=3"]
        ).rc
        == 0
    )
    tree = config_tree(chroots["kconfigs"][1])
    assert tree["/config/users/u/clients/c"]["config"] == {
        "producer_byte_rate": "1",
        "consumer_byte_rate": "2",
        "request_percentage": "3",
    }
    assert [n["entity_path"] for n in notifications(chroots["kconfigs"][1])] == ["users/u/clients/c"] * 3
