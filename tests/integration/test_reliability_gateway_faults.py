"""Faults at the gateway (docs/RELIABILITY.md section 3),
against real servers: ZooKeeper stopped under load (enforcement goes
on with the last quotas; resync after recovery measured), ZooKeeper session expiry, upstream
broker restart (clients reconnect through the gateway), SIGTERM drain (a request in flight when
the signal arrives gets its response). The 60-second outage is benchmarks/reliability_gateway.py."""

from __future__ import annotations

import calendar
import socket
import struct
import threading
import time
import uuid

import pytest

from kconfigs.model import QuotaEntity
from kconfigs.stores.factory import StoreOptions, open_store
from kconfigs_enforcement.gateway.reload import QuotaReloader
from tests.integration.gateway_support import (
    USAGE_WINDOW_MS,
    GatewayThread,
    mean_rate,
    produce_until,
    read_usage,
    usage_inside,
    wait_until,
)
from tests.integration.reliability_gateway import LOCALHOST, ServeProcess

pytestmark = pytest.mark.integration
QUOTA_BYTES_PER_SEC = 200_000
RECOVERY_ENTITY = QuotaEntity(client_id="written-after-recovery")
#: ZooKeeper 3.8.0's start-up race (here; not fixed upstream): a connection accepted while the server is
#: still loading its database fails to close (NullPointerException in removeCnxn) and is never
#: answered either, so a client that reconnects in that instant waits its whole handshake timeout
#: (kazoo, like ZooKeeper's Java client: session timeout / number of hosts = 30 s here).
ZK_STARTUP_RACE = b'because "this.zkDb" is null'


def set_quota(zk_connect: str, entity: QuotaEntity, configs: dict[str, str]) -> None:
    store = open_store(StoreOptions(zookeeper=zk_connect))
    try:
        store.alter(entity, lambda _current: configs)
    finally:
        store.close()


def _log_epoch_s(line: dict) -> float:
    """The JSON log's ``ts`` ("2026-08-08T10:00:00.123Z") as epoch seconds."""
    return calendar.timegm(time.strptime(line["ts"][:19], "%Y-%m-%dT%H:%M:%S")) + int(line["ts"][20:23]) / 1000


def run_zookeeper_outage(zk_server, zk_connect: str, upstream: str, workdir, outage_s: float) -> dict:
    """``kconfigs serve --zookeeper`` under a flat-out producer; ZooKeeper is stopped for
    ``outage_s``; right after it answers again a new entity is written. Returns the figures."""
    limited = QuotaEntity(client_id="zk-outage")
    set_quota(zk_connect, limited, {"producer_byte_rate": str(QUOTA_BYTES_PER_SEC)})
    set_quota(zk_connect, RECOVERY_ENTITY, {})  # a second run starts from one entity too
    serve = ServeProcess(
        workdir,
        upstream,
        zookeeper=zk_connect,
        settings={"quota_window_num": 2, "usage_log_window_ms": USAGE_WINDOW_MS},
    )
    stop, errors = threading.Event(), []
    producer = threading.Thread(target=produce_until, args=(serve.bootstrap, "zk-outage", stop, errors))
    try:
        producer.start()
        time.sleep(4)
        outage_start = time.time()
        zk_server.stop()
        time.sleep(outage_s)
        outage_end = time.time()
        zk_log_offset = zk_server.log_path.stat().st_size
        zk_server.start()
        back_at = time.time()  # ZooKeeper answers again (start() waits for it)
        set_quota(zk_connect, RECOVERY_ENTITY, {"producer_byte_rate": "12345"})
        applied_at = _wait_for_log(
            serve, lambda l: l["msg"] == "quotas loaded: 2 entities" or l["msg"].endswith("; 2 entities in force"), 60
        )
        time.sleep(3)
        stop.set()
        producer.join(90)
    finally:
        stop.set()
        zk_server.start()
        serve.stop()
    lines = [l for l in read_usage(serve.usage_path) if l["client_id"] == "zk-outage" and l["kind"] == "produce"]
    during, window_count = usage_inside(lines, outage_start * 1000, outage_end * 1000, USAGE_WINDOW_MS)
    log = serve.log_lines()
    return {
        "outage_s": round(outage_end - outage_start, 1),
        "errors": errors,
        "windows_during": window_count,
        "busy_windows_during": len(during),
        "quota_during": sorted({l["quota"] for l in during}),
        "throttled_windows_during": sum(l["throttle_ms"] > 0 for l in during),
        "rate_during_bytes_per_sec": round(mean_rate(during, window_count, USAGE_WINDOW_MS)),
        "lost_logged": any("connection lost" in l["msg"] for l in log),
        "resync_s": None if applied_at is None else round(applied_at - back_at, 2),
        "zk_startup_race": ZK_STARTUP_RACE in _zookeeper_log_since(zk_server, zk_log_offset),
    }


def _zookeeper_log_since(zk_server, offset: int) -> bytes:
    with open(zk_server.log_path, "rb") as log:
        log.seek(offset)
        return log.read()


def _wait_for_log(serve: ServeProcess, predicate, timeout_s: float) -> float | None:
    """Epoch seconds of the first log line matching ``predicate`` (waits up to ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in serve.log_lines():
            if predicate(line):
                return _log_epoch_s(line)
        time.sleep(0.1)
    return None


def test_zookeeper_outage_under_load_keeps_quotas_and_resyncs_within_5_s(zk_server, zk_connect, tansu_broker, tmp_path):
    figures = run_zookeeper_outage(zk_server, zk_connect, tansu_broker.bootstrap, tmp_path, outage_s=10)
    if figures["zk_startup_race"] and (figures["resync_s"] is None or figures["resync_s"] > 5.0):
        # ZooKeeper's own bug held the reconnection (ZK_STARTUP_RACE), not the gateway: measure
        # again; a second hit is as unlikely as the first squared (1 run in 20 hit it).
        (tmp_path / "again").mkdir()
        figures = run_zookeeper_outage(zk_server, zk_connect, tansu_broker.bootstrap, tmp_path / "again", outage_s=10)
    assert figures["errors"] == []
    assert figures["lost_logged"]
    assert figures["windows_during"] >= 7 and figures["quota_during"] == [QUOTA_BYTES_PER_SEC]
    # Enforced all along: every window with traffic was throttled (the first may start before the
    # client reaches the quota again); idle windows are the throttle at work.
    assert figures["throttled_windows_during"] >= figures["busy_windows_during"] - 1, figures
    assert figures["rate_during_bytes_per_sec"] <= 1.3 * QUOTA_BYTES_PER_SEC, figures
    assert figures["resync_s"] is not None and figures["resync_s"] <= 5.0, figures


def _expire_session(zk_server, store) -> None:
    """Expire the store's ZooKeeper session on the server: a second client joins the session with
    its id and password and closes it (kazoo's own test technique). A restarted ZooKeeper would
    instead renew every session it restores, so stopping the server cannot force an expiry."""
    from kazoo.client import KazooClient

    twin = KazooClient(hosts=zk_server.hosts, client_id=store.client.client_id)
    twin.start(timeout=10)
    twin.stop()
    twin.close()


def test_zookeeper_session_expiry_resyncs(zk_server, zk_connect, tansu_broker):
    """The watch's session expires: the gateway keeps its quotas, gets a new session, re-reads
    everything (resync), and changes made after that are picked up."""
    from kconfigs.stores.zookeeper import ZkSettings, ZooKeeperStore

    set_quota(zk_connect, QuotaEntity(client_id="expiry"), {"producer_byte_rate": "1000"})
    gateway = GatewayThread(tansu_broker.bootstrap)
    store = ZooKeeperStore(ZkSettings(hosts=zk_connect, session_timeout_s=4.0))
    states: list[tuple[float, str]] = []
    reloader = QuotaReloader(
        store,
        gateway.loop,
        gateway.gateway.quotas.load,
        on_state=lambda state: states.append((time.monotonic(), state)),
    )
    quotas = gateway.gateway.quotas
    try:
        reloader.start()
        assert wait_until(lambda: quotas.quota_for("produce", "ANONYMOUS", "expiry", None) == 1000, 10)
        session_before = store.client.client_id[0]
        expired_at = time.monotonic()
        _expire_session(zk_server, store)
        assert wait_until(lambda: "resynced" in [s for _t, s in states], 30), states
        resync_s = next(t for t, s in states if s == "resynced") - expired_at
        assert quotas.quota_for("produce", "ANONYMOUS", "expiry", None) == 1000  # kept all along
        set_quota(zk_connect, QuotaEntity(client_id="expiry"), {"producer_byte_rate": "2000"})
        # the watch re-armed
        assert wait_until(lambda: quotas.quota_for("produce", "ANONYMOUS", "expiry", None) == 2000, 10)
        assert store.client.client_id[0] != session_before  # a new session: the old one expired
        assert [s for _t, s in states][:2] == ["lost", "resynced"]
        assert resync_s <= 5.0, resync_s
    finally:
        reloader.close()
        store.close()
        gateway.stop()


def test_upstream_broker_restart_clients_reconnect_through_the_gateway(kraft_broker, tmp_path):
    """The Kafka broker behind the gateway is stopped (controlled shutdown) and started again on
    the same port: the same producer, which only knows the gateway, gets acknowledgements again."""
    import os

    from kafka import KafkaProducer

    from tests.integration.gateway_support import remote_ports_of_pid

    serve = ServeProcess(tmp_path, kraft_broker.bootstrap)
    producer = KafkaProducer(
        bootstrap_servers=serve.bootstrap,
        client_id="survivor",
        linger_ms=2,
        request_timeout_ms=5000,
        max_block_ms=60_000,
    )
    topic, acked_after = f"restart-{uuid.uuid4().hex[:6]}", []
    try:
        producer.send(topic, b"before").get(30)
        kraft_broker.stop()
        try:
            producer.send(topic, b"during").get(3)
        except Exception:
            pass  # the broker is gone: an error or a timeout is expected
        time.sleep(2)
        kraft_broker.start()  # returns once the broker answers metadata requests
        up_at = time.monotonic()
        for i in range(20):
            producer.send(topic, b"after-%d" % i).get(60)
            acked_after.append(time.monotonic())
        reconnect_s = acked_after[0] - up_at
        broker_port = int(kraft_broker.bootstrap.rsplit(":", 1)[1])
        assert serve.alive() and len(acked_after) == 20
        assert broker_port not in remote_ports_of_pid(os.getpid())  # reconnected through the gateway only
        assert reconnect_s < 30, reconnect_s
        assert "closed the connection" in serve.log_text()
    finally:
        producer.close(5)
        kraft_broker.start()
        serve.stop()


def _fetch_frame(topic: str, offset: int, max_wait_ms: int, correlation_id: int) -> bytes:
    from kafka.protocol.consumer.fetch import FetchRequest

    partition = FetchRequest.FetchTopic.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
        version=4,
    )
    request.with_header(correlation_id=correlation_id, client_id="drain-probe")
    body = bytes(request.encode(header=True))
    return struct.pack(">i", len(body)) + body


def _read_frame(sock: socket.socket) -> bytes | None:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    size, body = struct.unpack(">i", head)[0], b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return body


def test_sigterm_drains_the_request_in_flight(kraft_broker, tmp_path):
    """A Fetch long poll (4 s) is in flight at the broker when SIGTERM arrives: its response still
    reaches the client, then the connection closes and the gateway exits 0."""
    from kafka import KafkaProducer

    serve = ServeProcess(tmp_path, kraft_broker.bootstrap, settings={"drain_timeout_ms": 15000})
    topic = f"drain-{uuid.uuid4().hex[:6]}"
    try:
        producer = KafkaProducer(bootstrap_servers=serve.bootstrap, client_id="drain-setup")
        producer.send(topic, b"one").get(30)
        producer.close()
        sock = socket.create_connection((LOCALHOST, serve.port), timeout=30)
        sock.sendall(_fetch_frame(topic, offset=1, max_wait_ms=4000, correlation_id=4242))  # waits for new data
        time.sleep(1)
        signalled = time.monotonic()
        serve.sigterm()
        response = _read_frame(sock)
        answered_after_s = time.monotonic() - signalled
        after = _read_frame(sock)  # then the gateway closes the drained connection
        exit_code = serve.proc.wait(30)
        assert response is not None and struct.unpack(">i", response[:4])[0] == 4242
        assert 1.5 <= answered_after_s < 10, answered_after_s  # the broker's long poll ran to its end
        assert after is None
        assert exit_code == 0
        assert "draining" in serve.log_text()
    finally:
        serve.stop()
