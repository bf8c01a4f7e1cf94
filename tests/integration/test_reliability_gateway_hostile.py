"""Hostile input at the gateway (docs/RELIABILITY.md section 2):
10,000 hostile frames, slowloris clients, oversized length prefixes
and connection floods against a real ``kconfigs serve`` process in front of tansu, while a
well-behaved kafka-python producer and consumer keep working through the same gateway.

Figures for docs/RELIABILITY.md section 2 come from ``benchmarks/reliability_gateway.py hostile``,
which runs the same code with the same seed."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import struct
import time
import uuid

import pytest

from kconfigs.model import DEFAULT, QuotaEntity
from kconfigs.stores.sqlite import SqliteStore
from tests.integration.reliability_gateway import (
    LOCALHOST,
    ServeProcess,
    SteadyTraffic,
    capture_client_frames,
    hostile_frame,
    raise_fd_limit,
    run_barrage,
)

pytestmark = pytest.mark.integration
SEED = 20260808
CASES = int(os.environ.get("KCONFIGS_FUZZ_FRAMES", "10000"))
#: short named timeouts so that every hostile connection ends within seconds in the test
HOSTILE_SETTINGS = {
    "request_read_timeout_ms": 1000,
    "connections_max_idle_ms": 4000,
    "quota_admin_principals": ["*"],
    "log_format": "json",
}


def _store_with_quotas(path) -> str:
    """Quotas that switch on every decoding path: producer ids (Produce decoded), byte rates."""
    store = SqliteStore(str(path))
    store.alter(QuotaEntity(user=DEFAULT), lambda _c: {"producer_ids_rate": "1000", "producer_byte_rate": "1e9"})
    store.alter(QuotaEntity(client_id="fuzz"), lambda _c: {"request_percentage": "400"})
    store.close()
    return str(path)


def _broker_port(serve: ServeProcess, timeout_s: float = 30) -> int:
    """The per-broker listener the gateway advertised (bound on the first Metadata response)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=serve.bootstrap, client_id="probe")
    try:
        brokers = consumer._client.cluster.brokers()
        deadline = time.monotonic() + timeout_s
        while not brokers and time.monotonic() < deadline:
            consumer.topics()
            brokers = consumer._client.cluster.brokers()
        return next(iter(brokers)).port
    finally:
        consumer.close()


def run_hostile_frames(tansu_bootstrap: str, workdir, cases: int = CASES, seed: int = SEED) -> dict:
    """Throw ``cases`` hostile frames at a serve process during steady traffic; return figures."""
    raise_fd_limit()
    captured = capture_client_frames(workdir)
    serve = ServeProcess(
        workdir, tansu_bootstrap, store=_store_with_quotas(workdir / "fuzz.db"), settings=HOSTILE_SETTINGS
    )
    try:
        ports = [serve.port, _broker_port(serve)]
        traffic = SteadyTraffic(serve.bootstrap, f"steady-{uuid.uuid4().hex[:6]}").start()
        time.sleep(2)
        rss_before_kib = serve.status_kib("VmRSS")
        rng = random.Random(seed)
        frames = [hostile_frame(rng, captured) for _ in range(cases)]
        started = time.monotonic()
        barrage = asyncio.run(run_barrage(ports, frames, concurrency=200, wait_s=8.0))
        ended = time.monotonic()
        time.sleep(1)
        traffic.stop()
        figures = {
            "cases": cases,
            "seconds": round(ended - started, 1),
            "summary": barrage.summary(),
            "left_open": [o.kind for o in barrage.outcomes if not o.closed_by_gateway],
            "alive": serve.alive(),
            "errors": traffic.errors,
            "acked_during": sum(started <= t <= ended for t in traffic.acked),
            "consumed_during": sum(started <= t <= ended for t in traffic.consumed_at),
            "longest_ack_gap_s": round(traffic.longest_gap_s(traffic.acked, started, ended), 2),
            "longest_consume_gap_s": round(traffic.longest_gap_s(traffic.consumed_at, started, ended), 2),
            "rss_before_mib": round(rss_before_kib / 1024, 1),
            "rss_after_mib": round(serve.status_kib("VmRSS") / 1024, 1),
            "peak_rss_mib": round(serve.status_kib("VmHWM") / 1024, 1),
            "bad_frames": serve.metric("kconfigs_gateway_bad_frames_total", side="client"),
            "unexpected_errors": [l["msg"] for l in serve.log_lines() if "unexpected error" in l["msg"] or "exc" in l],
        }
        figures["fresh_client_ok"] = _fresh_produce(serve.bootstrap)
        return figures
    finally:
        serve.stop()


def _fresh_produce(bootstrap: str) -> bool:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="after-barrage")
    try:
        producer.send("after-barrage", b"still serving").get(30)
        return True
    finally:
        producer.close()


def test_ten_thousand_hostile_frames_close_only_their_connections(tansu_broker, tmp_path):
    figures = run_hostile_frames(tansu_broker.bootstrap, tmp_path)
    assert figures["alive"] and figures["fresh_client_ok"]
    assert figures["unexpected_errors"] == []  # every bad input is a clean "bad frame", not a gateway bug
    assert figures["left_open"] == []  # each hostile connection was closed by the gateway, no half-close
    assert sum(row["cases"] for row in figures["summary"].values()) == CASES
    assert figures["bad_frames"] >= CASES // 2
    assert figures["errors"] == [] and figures["acked_during"] > 0
    # the steady producer and consumer kept going throughout the barrage
    assert (
        figures["consumed_during"] > 0 and figures["longest_ack_gap_s"] < 10 and figures["longest_consume_gap_s"] < 10
    ), figures
    assert figures["rss_after_mib"] < figures["rss_before_mib"] + 100


# ---- slowloris, oversized prefixes, floods -----------------------------------------------------------


def _seconds_until_closed(sock: socket.socket, limit_s: float, since: float | None = None) -> float | None:
    """Seconds from ``since`` (default: now) until the peer closed ``sock``; None if it did not."""
    start = time.monotonic() if since is None else since
    sock.settimeout(limit_s)
    try:
        while sock.recv(4096):
            pass
    except socket.timeout:
        return None
    except OSError:
        pass
    return time.monotonic() - start


API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, 1, 0)  # size, key, version, correlation, client-id ""


def test_slowloris_clients_are_cut_by_the_named_timeouts(tansu_broker, tmp_path):
    serve = ServeProcess(
        tmp_path, tansu_broker.bootstrap, settings={"request_read_timeout_ms": 1500, "connections_max_idle_ms": 3000}
    )
    try:
        # 1. dribbling a frame one byte every 200 ms: cut request_read_timeout_ms after the prefix
        dribbler = socket.create_connection((LOCALHOST, serve.port))
        dribbler.sendall(API_VERSIONS_V0[:4])
        prefix_done, cut_after_s = time.monotonic(), None
        for byte in API_VERSIONS_V0[4:] * 3:
            try:
                dribbler.sendall(bytes([byte]))
            except OSError:
                cut_after_s = time.monotonic() - prefix_done
                break
            time.sleep(0.2)
        if cut_after_s is None:
            cut_after_s = (_seconds_until_closed(dribbler, 5) or 99) + time.monotonic() - prefix_done
        # 2. a half frame, then silence; 3. a connection that never sends a byte
        half = socket.create_connection((LOCALHOST, serve.port))
        half.sendall(struct.pack(">i", 100) + b"\x00\x12")
        half_sent = time.monotonic()
        silent = socket.create_connection((LOCALHOST, serve.port))
        silent_since = time.monotonic()
        half_closed_s = _seconds_until_closed(half, 10, half_sent)
        silent_closed_s = _seconds_until_closed(silent, 10, silent_since)
        # 4. a well-behaved client that pauses between requests longer than request_read_timeout_ms
        patient = socket.create_connection((LOCALHOST, serve.port))
        answers = 0
        for _ in range(3):
            patient.sendall(API_VERSIONS_V0)
            answers += len(patient.recv(65536)) > 0
            time.sleep(2)
        assert serve.alive()
        assert 1.0 <= cut_after_s < 3.0, cut_after_s
        assert half_closed_s is not None and 1.0 <= half_closed_s < 3.0, half_closed_s
        assert silent_closed_s is not None and 2.0 <= silent_closed_s < 4.5, silent_closed_s
        assert answers == 3  # pauses between whole requests are not a slow request
        logged = serve.log_text()
        assert "request_read_timeout_ms=1500" in logged and "connections_max_idle_ms=3000" in logged
    finally:
        serve.stop()


def test_oversized_length_prefixes_are_rejected_without_allocating(tansu_broker, tmp_path):
    serve = ServeProcess(tmp_path, tansu_broker.bootstrap, settings={"max_frame_bytes": 64 * 1024 * 1024})
    try:
        time.sleep(0.5)
        before_kib = serve.status_kib("VmHWM")
        sizes = [2**31 - 1, 64 * 1024 * 1024 + 1, 0x16030100, 1_000_000_000]
        socks = []
        for i in range(400):
            sock = socket.create_connection((LOCALHOST, serve.port))
            sock.sendall(struct.pack(">i", sizes[i % len(sizes)]) + b"\x00\x03\x00\x0c" * 4)
            socks.append(sock)
        closed = [_seconds_until_closed(s, 10) for s in socks]
        for sock in socks:
            sock.close()
        growth_mib = (serve.status_kib("VmHWM") - before_kib) / 1024
        assert all(c is not None and c < 5 for c in closed)
        # 400 prefixes announcing 64 MiB..2 GiB each: had any been allocated, the peak would be >= 64 MiB up
        assert growth_mib < 32, growth_mib
        assert serve.metric("kconfigs_gateway_bad_frames_total", side="client") == 400
        assert "exceeds the limit of 67108864 bytes" in serve.log_text()
    finally:
        serve.stop()


def _open_from(source_ip: str, port: int, count: int) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind((source_ip, 0))
        sock.connect((LOCALHOST, port))
        socks.append(sock)
    return socks


def _still_open(socks: list[socket.socket], wait_s: float = 1.5) -> int:
    time.sleep(wait_s)
    open_count = 0
    for sock in socks:
        sock.setblocking(False)
        try:
            open_count += sock.recv(1) != b""
        except BlockingIOError:
            open_count += 1  # nothing to read and not closed
        except OSError:
            pass
    return open_count


def test_connection_floods_are_bounded_by_max_connections(tansu_broker, tmp_path):
    raise_fd_limit()
    serve = ServeProcess(
        tmp_path, tansu_broker.bootstrap, settings={"max_connections": 120, "max_connections_per_ip": 50}
    )
    groups = {}
    try:
        groups["127.0.0.2"] = _open_from("127.0.0.2", serve.port, 200)  # one IP floods: held at 50
        held_one_ip = _still_open(groups["127.0.0.2"])
        for ip in ("127.0.0.3", "127.0.0.4", "127.0.0.5"):
            groups[ip] = _open_from(ip, serve.port, 40)
        held = {ip: _still_open(socks) for ip, socks in groups.items()}
        open_gauge = serve.metric("kconfigs_gateway_open_connections")
        over = {
            limit: serve.metric("kconfigs_gateway_connections_over_limit_total", limit=limit)
            for limit in ("max_connections", "max_connections_per_ip")
        }
        for socks in groups.values():
            for sock in socks:
                sock.close()
        time.sleep(1)
        # after the flood the gateway serves again
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=serve.bootstrap, client_id="after-flood")
        producer.send("after-flood", b"ok").get(30)
        producer.close()
        assert held_one_ip == 50
        assert held["127.0.0.2"] == 50 and sum(held.values()) == 120, held
        assert open_gauge == 120
        assert over == {"max_connections_per_ip": 150, "max_connections": 50}, over  # 200-50; 50+120-120
    finally:
        for socks in groups.values():
            for sock in socks:
                sock.close()
        serve.stop()
