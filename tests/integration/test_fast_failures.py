"""Failures that come at once and say what went wrong: a port nothing listens on, a host no
resolver knows, a default port assumed, and the hints for command lines that mix kconfigs' and
kafka-configs' grammars. Timed in-process (the command, not the interpreter's start)."""

from __future__ import annotations

import socket
import time

import pytest

from harness.cli import run_main
from kconfigs import __version__

#: the issue's bound for a refused port or an unresolvable host
FAST_S = 2.0


def _timed(*argv: str) -> tuple[float, tuple[int, str, str]]:
    start = time.monotonic()
    result = run_main(*argv)
    return time.monotonic() - start, result


@pytest.fixture
def closed_port():
    """A 127.0.0.1 port bound but never listened on: every connection to it is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.mark.parametrize("servers", ["{a}", "{a},{b}"])
@pytest.mark.parametrize("grammar", ["kafka-configs", "subcommand"])
def test_a_refused_bootstrap_port_fails_at_once_saying_so(isolated_env, closed_port, servers, grammar):
    """It waited for the 30 s request timeout, then said only that it timed out."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        bootstrap = servers.format(a=f"127.0.0.1:{closed_port}", b=f"127.0.0.1:{other.getsockname()[1]}")
        argv = (
            ["--bootstrap-server", bootstrap, "--describe", "--entity-type", "users"]
            if grammar == "kafka-configs"
            else ["describe", "--bootstrap-server", bootstrap]
        )
        elapsed, result = _timed(*argv)
    assert result == (
        1,
        "",
        f"Cannot reach Kafka at {bootstrap}: connection refused "
        "(nothing listens there: is the port right, is Kafka running?)\n",
    )
    assert elapsed < FAST_S


def test_a_refused_bootstrap_port_fails_an_alter_at_once(isolated_env, closed_port):
    argv = ["--bootstrap-server", f"127.0.0.1:{closed_port}", "--alter", "--user", "u"]
    elapsed, (code, _, err) = _timed(*argv, "--add-config", "producer_byte_rate=5")
    assert (code, elapsed < FAST_S) == (1, True) and "connection refused" in err


@pytest.mark.parametrize("argv", [["describe"], ["--describe", "--entity-type", "users"]])
def test_an_unresolvable_zookeeper_host_fails_at_once_saying_cannot_resolve(isolated_env, argv):
    """It waited kazoo's 10 s connect timeout, then said "Cannot connect"."""
    connect = "no-such-host.invalid:2181/kafka"
    elapsed, result = _timed(
        *(["--zookeeper", connect, *argv] if argv[0] != "describe" else [*argv, "--zookeeper", connect])
    )
    assert result == (1, "", f"Cannot connect to ZooKeeper at {connect}: cannot resolve no-such-host.invalid\n")
    assert elapsed < FAST_S


def test_a_refused_zookeeper_port_fails_at_once_naming_the_port_assumed(isolated_env):
    """``--zookeeper 127.0.0.1`` means 127.0.0.1:2181, which was never said. The port is held
    bound without listening, so that the refusal is certain."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 2181))
        elapsed, result = _timed("--zookeeper", "127.0.0.1/kafka", "--describe", "--entity-type", "users")
    assert result == (
        1,
        "",
        "Cannot connect to ZooKeeper at 127.0.0.1/kafka: 127.0.0.1:2181 refused the connection "
        "(port 2181 assumed: none given for 127.0.0.1)\n",
    )
    assert elapsed < FAST_S


def test_an_unresolvable_bootstrap_host_fails_at_once_with_the_admin_clients_text(isolated_env):
    elapsed, result = _timed("--bootstrap-server", "no-such-host.invalid:9092", "--describe", "--entity-type", "users")
    assert result == (1, "", "No resolvable bootstrap urls given in bootstrap.servers\n")
    assert elapsed < FAST_S


@pytest.mark.parametrize(
    "word, hint",
    [
        ("describe", "; kafka-configs' grammar spells it --describe"),
        ("export", ""),
    ],
)
def test_a_subcommand_after_the_options_is_told_to_come_first(isolated_env, word, hint):
    """It printed kafka-configs' 40-line option table after "Command must include exactly one action"."""
    assert run_main("--zookeeper", "127.0.0.1:1", word) == (
        1,
        "",
        f"{word} is a kconfigs subcommand, which comes first: kconfigs {word} [options]{hint}\n",
    )


def test_migrate_from_an_address_without_a_scheme_suggests_zk(isolated_env):
    """It said "No profile '127.0.0.1:2181/kafka' ...", never what to write instead."""
    code, out, err = run_main("migrate", "--from", "127.0.0.1:2181/kafka", "--to", "kafka://127.0.0.1:1")
    assert (code, out) == (1, "")
    assert err == (
        "'127.0.0.1:2181/kafka' is not a profile; an address needs its scheme: zk://127.0.0.1:2181/kafka "
        "(ZooKeeper), kafka://127.0.0.1:2181/kafka (brokers) or kafka-controller://127.0.0.1:2181/kafka\n"
    )


@pytest.mark.parametrize("argv", [["--version"], ["--version", "--describe"]])
def test_version_prints_kconfigs_version_as_the_readme_says(argv):
    assert run_main(*argv) == (0, f"{__version__} (kconfigs)\n", "")
