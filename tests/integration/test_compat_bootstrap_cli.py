"""kconfigs as a drop-in for kafka-configs --bootstrap-server: the same command
lines, run through the real CLI against a KRaft broker, give the same output and state as
Kafka's own ConfigCommand from the same jars; kconfigs' own commands work on this store too."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from harness.java import run_config_command
from harness.versions import BOOTSTRAP_TOOL_VERSIONS


@pytest.fixture(scope="module", params=BOOTSTRAP_TOOL_VERSIONS)
def broker(request, kraft_broker_factory):
    return kraft_broker_factory(request.param)


def kconfigs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kconfigs", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120
    )


def kafka_configs(broker, *args: str) -> subprocess.CompletedProcess:
    """Kafka's ConfigCommand of the broker's version in the session's one JVM for that version
    (ToolBatch: one JVM start per version, not per command; the same output and exit status)."""
    return run_config_command(broker.version, ["--bootstrap-server", broker.bootstrap, *args])


def as_set(stdout: str) -> set:
    """kafka-configs prints entities and pairs in HashMap order: compare as sets of pairs."""
    out = set()
    for line in stdout.splitlines():
        head, _, pairs = line.partition(" are ")
        out.add((head, frozenset(pairs.split(", "))))
    return out


def eventually_equal(read, expected, timeout_s=15.0):
    """Brokers answer describes from a metadata image that trails the controller."""
    deadline = time.monotonic() + timeout_s
    while (got := read()) != expected and time.monotonic() < deadline:
        time.sleep(0.25)
    return got


CASES = [
    (
        "users-named",
        ["--entity-type", "users", "--entity-name", "cli-u1"],
        "producer_byte_rate=1024,request_percentage=200",
    ),
    ("tuple", ["--user", "cli-u1", "--client", "cli-c1"], "consumer_byte_rate=10485760"),
    (
        "default-tuple",
        ["--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default"],
        "controller_mutation_rate=12.5",
    ),
    ("ip", ["--ip", "10.9.8.7"], "connection_creation_rate=100"),
    ("client-defaults", ["--client-defaults"], "producer_byte_rate=2147483647"),
]


@pytest.mark.parametrize("name,entity,add", CASES, ids=[c[0] for c in CASES])
def test_alter_prints_the_same_line_and_each_tool_reads_the_others_write(broker, name, entity, add):
    ours = kconfigs("--bootstrap-server", broker.bootstrap, "--alter", *entity, "--add-config", add)
    assert ours.returncode == 0, ours.stderr
    theirs_describe = lambda: as_set(kafka_configs(broker, "--describe", *entity).stdout)  # noqa: E731
    ours_describe = lambda: as_set(kconfigs("--bootstrap-server", broker.bootstrap, "--describe", *entity).stdout)  # noqa: E731
    expected = eventually_equal(ours_describe, theirs_describe())
    assert expected and eventually_equal(theirs_describe, expected) == expected

    keys = ",".join(pair.split("=")[0] for pair in add.split(","))
    ours_delete = kconfigs("--bootstrap-server", broker.bootstrap, "--alter", *entity, "--delete-config", keys)
    assert ours_delete.returncode == 0, ours_delete.stderr
    eventually_equal(theirs_describe, set())
    theirs = kafka_configs(broker, "--alter", *entity, "--add-config", add)
    assert theirs.returncode == 0, theirs.stderr
    assert ours.stdout == theirs.stdout  # "Completed updating config for user cli-u1." etc.
    assert eventually_equal(ours_describe, expected) == expected
    kafka_configs(broker, "--alter", *entity, "--delete-config", keys)


def test_deleting_an_unset_key_fails_the_same_way_and_changes_nothing(broker):
    entity = ["--user", "cli-unset"]
    assert (
        kconfigs(
            "--bootstrap-server", broker.bootstrap, "--alter", *entity, "--add-config", "producer_byte_rate=5"
        ).returncode
        == 0
    )
    ours = kconfigs(
        "--bootstrap-server",
        broker.bootstrap,
        "--alter",
        *entity,
        "--delete-config",
        "consumer_byte_rate,request_percentage",
    )
    theirs = kafka_configs(broker, "--alter", *entity, "--delete-config", "consumer_byte_rate,request_percentage")
    assert (ours.returncode, theirs.returncode) == (1, 1)
    assert (
        ours.stderr.strip()
        == theirs.stderr.strip().splitlines()[0]
        == "Invalid config(s): consumer_byte_rate,request_percentage"
    )
    described = kconfigs("--bootstrap-server", broker.bootstrap, "--describe", *entity).stdout
    assert described == "Quota configs for user-principal 'cli-unset' are producer_byte_rate=5.0\n"


def test_own_commands_work_on_the_admin_api_store(broker):
    server = ["--bootstrap-server", broker.bootstrap]
    done = kconfigs(
        "alter",
        *server,
        "--user",
        "own-u",
        "--client-default",
        "--set",
        "producer_byte_rate=4096",
        "--set",
        "request_percentage=25",
    )
    assert done.returncode == 0, done.stderr

    def described():
        out = kconfigs("describe", *server, "--user", "own-u", "--client-default", "-o", "json").stdout
        return json.loads(out) if out.strip() else []

    expected = [
        {
            "entity": {"user": "own-u", "client-id": None},
            "quotas": {"producer_byte_rate": 4096, "request_percentage": 25.0},
        }
    ]
    assert eventually_equal(described, expected) == expected
    resolved = kconfigs("resolve", *server, "--user", "own-u", "--client-id", "any", "-o", "json")
    assert resolved.returncode == 0, resolved.stderr
    assert "/config/users/own-u/clients/<default>" in resolved.stdout
    assert kconfigs("delete", *server, "--user", "own-u", "--client-default", "--yes").returncode == 0
    assert eventually_equal(described, []) == []


def test_foot_guns_over_bootstrap_keep_kafka_configs_output_and_warn_once(broker):
    """An empty --user (an unset $U) describes the default user, and a space after a comma in
    --add-config drops the key after it, in every kafka-configs line: kconfigs prints the same
    stdout and exit code, and one warning line. (No default entity is written: the broker is shared.)"""
    described = ["--describe", "--user", ""]
    ours = kconfigs("--bootstrap-server", broker.bootstrap, *described)
    theirs = kafka_configs(broker, *described)
    assert (
        (ours.returncode, as_set(ours.stdout)) == (theirs.returncode, as_set(theirs.stdout)) == (0, as_set(ours.stdout))
    )
    assert ours.stderr == (
        "Warning: --user is empty, which kafka-configs reads as the default (as --user-defaults); "
        "an unset shell variable?\n"
    )
    entity = ["--user", "cli-comma-space"]
    altered = ["--alter", *entity, "--add-config", "producer_byte_rate=1024,", "consumer_byte_rate=2048"]
    ours = kconfigs("--bootstrap-server", broker.bootstrap, *altered)
    theirs = kafka_configs(broker, *altered)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout) == (0, ours.stdout)
    assert ours.stderr == (
        "Warning: 'consumer_byte_rate=2048' follows no option and is ignored, as kafka-configs ignores it "
        "(a space after a comma in --add-config ends its value)\n"
    )
    describe = lambda: kconfigs("--bootstrap-server", broker.bootstrap, "--describe", *entity).stdout  # noqa: E731
    expected = "Quota configs for user-principal 'cli-comma-space' are producer_byte_rate=1024.0\n"
    assert eventually_equal(describe, expected) == expected
    kafka_configs(broker, "--alter", *entity, "--delete-config", "producer_byte_rate")
