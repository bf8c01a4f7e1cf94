"""The control-plane side of the native data plane: one line when the extension is missing or
the removed asyncio path is asked for, the version ceilings handed to Rust, and one exact quota
state under charges from many threads."""

import os
import subprocess
import sys
import threading

import pytest

from harness.charging import charging_gateway
from harness.cli import run_main
from kconfigs_enforcement.gateway import native_plane
from kconfigs_enforcement.gateway.native_ext import ManualClock
from kconfigs_enforcement.gateway.quotas import QuotaGate

#: runs the CLI as an install built without cargo would: importing the extension fails
_WITHOUT_EXTENSION = (
    "import sys; sys.modules['kconfigs_enforcement._native'] = None; "
    "from kconfigs.__main__ import main; sys.argv[0] = 'kconfigs'; sys.exit(main())"
)


def _kconfigs_without_extension(*argv: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "KCONFIGS_HOME": str(cwd)}
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTENSION, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
    )


def test_without_the_extension_serve_says_so_in_one_line_and_nothing_else_breaks(tmp_path):
    serve = _kconfigs_without_extension("serve", "--upstream", "127.0.0.1:1", "--store", "q.db", cwd=tmp_path)
    assert serve.returncode != 0 and serve.stdout == ""
    assert serve.stderr == (
        "kconfigs serve needs the native extension (the gateway's Rust data plane), which was not built: "
        "reinstall kconfigs with cargo (Rust) on PATH\n"
    )
    assert not (tmp_path / "q.db").exists()  # refused before anything was opened
    # the embedded store ($KCONFIGS_HOME/quotas.db) and quota enforcement's pure-Python core
    alter = _kconfigs_without_extension(
        "--alter", "--user", "alice", "--add-config", "producer_byte_rate=1024", cwd=tmp_path
    )
    assert (alter.returncode, alter.stderr) == (0, ""), alter.stderr
    describe = _kconfigs_without_extension("--describe", "--user", "alice", cwd=tmp_path)
    assert describe.returncode == 0 and "producer_byte_rate=1024" in describe.stdout, describe.stderr


@pytest.mark.parametrize("value", ["asyncio", "turbo"])
def test_asking_for_another_data_plane_is_refused_in_one_line(value, monkeypatch):
    monkeypatch.setenv("KCONFIGS_GATEWAY_DATA_PLANE", value)
    code, out, err = run_main("serve", "--upstream", "127.0.0.1:1")
    assert (code != 0, out) == (True, "")
    assert err == (
        f"KCONFIGS_GATEWAY_DATA_PLANE={value}: the asyncio data path was removed and the native data plane "
        "is the only one; unset the variable\n"
    )


def test_data_plane_setting_is_refused_in_one_line(tmp_path):
    config = tmp_path / "gateway.toml"
    config.write_text('data_plane = "asyncio"\n')
    code, out, err = run_main("serve", "--upstream", "127.0.0.1:1", "--config", str(config))
    assert (code != 0, out) == (True, "")
    assert err == "Gateway setting 'data_plane' is gone: the native data plane is the only one: remove it\n"


def test_ceilings_keep_share_apis_and_describe_quorum():
    ceilings = native_plane.version_ceilings()
    # ShareFetch / ShareAcknowledge: the data plane rewrites their NodeEndpoints, DescribeQuorum
    # v2: it removes the controllers' listeners (each with its own crate cap, not Python's)
    assert not {55, 76, 77, 78, 79, 90, 91, 92} & set(ceilings)
    assert ceilings[0] >= 12  # Produce v12+: KIP-890 transactions
    assert 19 not in ceilings  # CreateTopics is passed through at the broker's versions


def test_throttle_first_versions_match_the_schemas():
    pairs = set(native_plane.throttle_first_versions())
    assert (3, 3) in pairs and (3, 2) not in pairs  # Metadata: from v3
    assert (1, 1) in pairs and (1, 0) not in pairs  # Fetch: from v1
    assert not any(key == 0 for key, _v in pairs)  # Produce keeps it after its responses
    # APIs newer than kafka-python: KIP-848 heartbeats, share groups, Streams groups (from the table)
    assert {(68, 0), (68, 1), (76, 1), (78, 2), (79, 2), (88, 1), (90, 0)} <= pairs
    # delegation tokens start with error_code; share-group state APIs (broker to broker) with results
    assert not {(38, 3), (41, 3), (83, 0), (85, 1)} & pairs
    assert (68, 9) not in pairs  # a version no one has checked is left unpatched


def _produce_rate(threads: int, per_thread: int, size: int) -> float:
    gate = QuotaGate(window_num=11, clock=ManualClock(1_000))
    gate.load([({"client-id": "app"}, {"producer_byte_rate": 1e12})])
    with charging_gateway(gate) as gateway:

        def charge():
            for _ in range(per_thread):
                gateway.charge("produce", "ANONYMOUS", "app", "127.0.0.1", size)

        workers = [threading.Thread(target=charge) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    rates = [s.value for s in gate.metric_samples() if s.group == "Produce" and s.name == "byte-rate"]
    assert len(rates) == 1
    return rates[0]


def test_one_entity_charged_from_many_threads_is_charged_exactly():
    """The native data plane charges from its worker threads: one entity's connections on
    different threads must add up to exactly what one thread charging it all would."""
    assert _produce_rate(8, 2_000, 1000) == _produce_rate(1, 16_000, 1000)


def test_the_control_plane_protocol_is_every_call_the_data_plane_makes():
    """The Rust side calls the bridge by name: the names in its source are the Protocol's methods."""
    import re
    from pathlib import Path

    import kconfigs_enforcement

    source = Path(kconfigs_enforcement.__path__[0]) / "native" / "src"
    rust = "\n".join(p.read_text() for p in source.rglob("*.rs"))
    called = set(re.findall(r'call_method1\(\s*py,\s*"([a-z_]+)"', rust))
    called |= set(re.findall(r'bridge_i64\(\s*"([a-z_]+)"', rust))
    declared = {name for name in vars(native_plane.ControlPlane) if not name.startswith("_")}
    assert called == declared
    bridge = native_plane.Bridge
    assert all(getattr(bridge, name) is not getattr(native_plane.ControlPlane, name) for name in declared)


def _read_until_closed(conn) -> bytes:
    """What a connection answers before it closes: a refused connection is closed unread, which
    ends in a FIN or, with the request still unread on the other side, a reset (both: nothing)."""
    try:
        return conn.recv(64)
    except ConnectionResetError:
        return b""


def test_a_bridge_error_is_logged_through_the_gateway_logger_and_fails_closed(caplog):
    """A connection the control plane cannot judge (its connection_attempt raised) is refused,
    and the error is one line of the gateway's log, not a traceback on stderr."""
    import asyncio
    import logging
    import socket

    from kconfigs_enforcement.gateway.config import GatewayConfig
    from kconfigs_enforcement.gateway.native_plane import NativeGateway

    async def attempt() -> tuple[bytes, float, float]:
        config = GatewayConfig(upstreams=(("127.0.0.1", 9),), listen=("127.0.0.1", 0), advertised_host="127.0.0.1")
        gateway = NativeGateway(config)
        gateway.quotas.load([({"ip": None}, {"connection_creation_rate": 100.0})])

        def broken(ip: str):
            raise RuntimeError("quota state unavailable")

        gateway._bridge.connection_attempt = broken
        await gateway.start()
        try:
            with socket.create_connection(gateway.bootstrap_address, timeout=10) as conn:
                conn.sendall(b"\x00\x00\x00\x0c\x00\x12\x00\x00\x00\x00\x00\x01\x00\x02ab")
                answer = await asyncio.get_running_loop().run_in_executor(None, _read_until_closed, conn)
        finally:
            await gateway.stop()
        stats = gateway.stats
        return answer, stats._refused.labels("bootstrap")._value.get(), stats._accepted.labels("bootstrap")._value.get()

    with caplog.at_level(logging.ERROR, logger="kconfigs.gateway"):
        answer, refused, accepted = asyncio.run(attempt())
    assert (answer, refused, accepted) == (b"", 1, 0)  # refused unanswered, never proxied
    errors = [r.getMessage() for r in caplog.records if r.name == "kconfigs.gateway" and r.levelno >= logging.ERROR]
    assert errors == ["control plane call connection_attempt failed: RuntimeError: quota state unavailable"], errors


def test_api_keys_and_charged_kinds_are_the_same_on_both_sides():
    """Kafka's API numbers come from the `kafka-protocol` crate on the Rust side; Python's names
    for them, and the quota kinds the data plane charges, must be the same numbers and names."""
    from kconfigs.keys import QUOTA_KINDS
    from kconfigs_enforcement._native import testing
    from kconfigs_enforcement.gateway import quotas, versions

    python_keys = {name: getattr(versions, name) for name in dir(versions) if name in testing.API_KEYS}
    assert len(python_keys) >= 8
    assert python_keys == {name: testing.API_KEYS[name] for name in python_keys}
    assert set(testing.CHARGED_KINDS) == set(quotas.KIND_KEYS) <= set(QUOTA_KINDS)
