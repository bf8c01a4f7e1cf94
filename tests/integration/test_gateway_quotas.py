"""Quota enforcement through the gateway with real clients against tansu.

Producer accuracy ("with producer_byte_rate=Q the achieved rate is within 0.95-1.05·Q for
both clients, and an unthrottled client beside it is unaffected"). Method, also used by the Kafka
reference runs in test_gateway_quota_reference.py (see tests/integration/quota_accuracy.py):

- the gateway runs Kafka's windowed rate with N = 2 samples of W = 1 s, so the burst allowance
  Q·(N−1)·W is one second of quota (with Kafka's default N = 11 it would be ten, and a run of
  ≤ 30 s would be dominated by it: the gateway behaves the same either way, only the run is
  longer);
- one over-quota producer floods 1 KiB messages for FLOOD_S seconds while an unthrottled,
  paced librdkafka producer runs beside it through the same gateway;
- the first (N+1)·W seconds after the flood starts are excluded (burst allowance plus one full
  window); the achieved rate is the least-squares slope of cumulative Produce bytes over the rest
  of the flood loop, both as the gateway charged it (its usage log) and as the client sent it.
"""

from __future__ import annotations

import collections
import socket
import struct
import threading
import time
import uuid

import pytest

from tests.integration.gateway_support import GatewayThread, read_usage, run_client_script
from tests.integration.quota_accuracy import (
    CONFLUENT_FLOOD,
    FLOOD_S,
    FLOODS,
    QUOTAS_BYTES_PER_SEC,
    WINDOW_NUM,
    shared_quota_ceiling,
    steady_rate,
    steady_window,
    usage_series,
)

pytestmark = pytest.mark.integration
FREE_PACE_BYTES_PER_SEC = 1_000_000


def _run_side_by_side(bootstrap: str, limited: tuple[str, str]) -> dict[str, dict]:
    """The over-quota flood and the paced unthrottled producer, at the same time."""
    topic, results = f"q-{uuid.uuid4().hex[:6]}", {}
    runs = {limited[1]: (FLOODS[limited[0]],), "ck-free": (CONFLUENT_FLOOD, str(FREE_PACE_BYTES_PER_SEC))}

    def run(client_id, script, *extra):
        results[client_id] = run_client_script(
            script, bootstrap, topic, client_id, str(FLOOD_S), *extra, timeout_s=FLOOD_S + 90
        )

    threads = [threading.Thread(target=run, args=(client_id, *args)) for client_id, args in runs.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(results) == set(runs), "a client run failed (see its stderr above)"
    return results


@pytest.mark.parametrize("client", ["kafka-python", "librdkafka"])
def test_producer_is_held_to_producer_byte_rate_beside_an_unthrottled_one(tansu_upstream, tmp_path, client):
    """kafka-python honours throttle_time_ms (its pause overlaps the gateway's mute); librdkafka
    ignores it and is held by the mute alone. Both must land in 0.95–1.05·Q."""
    quota, client_id = QUOTAS_BYTES_PER_SEC[client], f"limited-{client}"
    usage = tmp_path / "usage.jsonl"
    gateway = GatewayThread(tansu_upstream, usage_log_path=str(usage), quota_window_num=WINDOW_NUM)
    try:
        gateway.call_soon(
            gateway.gateway.quotas.load, [({"client-id": client_id}, {"producer_byte_rate": float(quota)})]
        )
        results = _run_side_by_side(gateway.bootstrap, (client, client_id))
    finally:
        gateway.stop()
    lines, limited, free = read_usage(usage), results[client_id], results["ck-free"]
    start_ms, end_ms = steady_window(limited, WINDOW_NUM)
    charged = steady_rate(usage_series(lines, client_id), start_ms, end_ms)
    sent = steady_rate(limited["series"], start_ms, end_ms)
    print(f"{client}: gateway-charged {charged / quota:.3f}·Q, client-sent {sent / quota:.3f}·Q")
    assert 0.95 * quota <= charged <= 1.05 * quota, charged / quota
    assert 0.95 * quota <= sent <= 1.05 * quota, sent / quota
    assert sum(l["throttle_ms"] for l in lines if l["client_id"] == client_id) > 0
    assert limited["throttle_max_ms"] > 0  # the client saw throttle_time_ms in the responses
    # the unthrottled producer beside it: never throttled, and got the rate it asked for
    assert sum(l["throttle_ms"] for l in lines if l["client_id"] == "ck-free") == 0
    assert free["throttle_max_ms"] == 0
    free_start_ms, free_end_ms = steady_window(free, WINDOW_NUM)
    assert steady_rate(usage_series(lines, "ck-free"), free_start_ms, free_end_ms) >= 0.95 * FREE_PACE_BYTES_PER_SEC


SMALL_BATCH_FLOOD = CONFLUENT_FLOOD.replace('"batch.size": 65536', '"batch.size": 16384')
assert SMALL_BATCH_FLOOD != CONFLUENT_FLOOD


def test_one_client_id_on_connections_spread_over_two_workers_shares_one_quota(tansu_upstream, tmp_path):
    """The native data plane charges on its worker threads: three producers with one client-id
    (their connections scheduled over two worker threads) are held to the one quota together,
    exactly as one broker holds them. Each connection is muted on its own, so each may still send
    one batch when its mute ends while the others' bytes keep the rate above the quota (Kafka's
    per-connection throttling does the same): batches of 16 KiB keep that small, and a pause of the
    whole client may earn one more burst allowance (``shared_quota_ceiling``). A quota held per
    worker thread instead would show twice the quota."""
    quota, client_id, producers = QUOTAS_BYTES_PER_SEC["librdkafka"], "shared-app", 3
    usage = tmp_path / "usage.jsonl"
    gateway = GatewayThread(
        tansu_upstream,
        usage_log_path=str(usage),
        quota_window_num=WINDOW_NUM,
        worker_threads=2,
    )
    topic, runs = f"q-{uuid.uuid4().hex[:6]}", []
    # what the data plane asks of Python (the bridge), by method and first argument
    calls, bridge = collections.Counter(), gateway.gateway._bridge

    def counted(name):
        method = getattr(bridge, name)

        def call(*args):
            calls[name, args[0]] += 1
            return method(*args)

        return call

    # every bridge call that could come once per request
    for name in ("resolve", "event", "max_fetch_bytes", "unrecord_sensor", "on_producer_ids"):
        setattr(bridge, name, counted(name))
    try:
        gateway.call_soon(
            gateway.gateway.quotas.load, [({"client-id": client_id}, {"producer_byte_rate": float(quota)})]
        )

        def run():
            runs.append(
                run_client_script(
                    SMALL_BATCH_FLOOD, gateway.bootstrap, topic, client_id, str(FLOOD_S), timeout_s=FLOOD_S + 90
                )
            )

        threads = [threading.Thread(target=run) for _ in range(producers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        metrics = gateway.gateway.stats.registry
    finally:
        gateway.stop()
    assert len(runs) == producers, "a client run failed (see its stderr above)"
    windows = [steady_window(r, WINDOW_NUM) for r in runs]
    start_ms, end_ms = max(w[0] for w in windows), min(w[1] for w in windows)
    charged = steady_rate(usage_series(read_usage(usage), client_id), start_ms, end_ms)
    sent = sum(steady_rate(r["series"], start_ms, end_ms) for r in runs)
    ceiling = shared_quota_ceiling(quota, WINDOW_NUM, start_ms, end_ms)
    print(
        f"one client-id over 2 workers: charged {charged / quota:.3f}·Q, sent {sent / quota:.3f}·Q, "
        f"ceiling {ceiling / quota:.3f}·Q"
    )
    assert 0.95 * quota <= charged <= ceiling, charged / quota
    assert 0.95 * quota <= sent <= ceiling, sent / quota
    assert all(r["throttle_max_ms"] > 0 for r in runs)
    # charged on the worker threads: Python is asked which sensor applies, never per request,
    # not even per throttled request (throttles and mutes are queued and read by the metrics)
    asked = sum(n for (name, _arg), n in calls.items() if name == "resolve")
    assert 0 < asked <= 10 and calls["event", "throttled"] == 0, calls
    assert not {name for name, _arg in calls} - {"resolve", "event"}, calls
    families = {family.name: family.samples for family in metrics.collect()}
    throttle_avg = max(
        [s.value for s in families["kafka_server_produce_throttle_time"] if s.labels["client_id"] == client_id]
    )
    muted = sum(s.value for s in families["kconfigs_gateway_throttled_responses"] if s.name.endswith("_total"))
    assert throttle_avg and throttle_avg > 0 and muted and muted > 0, (throttle_avg, muted)


def _api_versions_request(correlation_id: int) -> bytes:
    body = struct.pack(">hhih", 18, 0, correlation_id, 5) + b"storm"
    return struct.pack(">i", len(body)) + body


def _attempt_connection(port: int, accepted: list, lock: threading.Lock) -> None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(_api_versions_request(1))
            if len(sock.recv(4)) == 4:
                with lock:
                    accepted.append(time.monotonic())
    except OSError:
        pass


def test_connection_storm_from_one_ip_is_held_to_connection_creation_rate(tansu_upstream):
    limit_per_sec, storm_s = 10, 12
    gateway = GatewayThread(tansu_upstream, quota_window_num=2)
    try:
        # set on 127.1, a name of the address the storm comes from (127.0.0.1), as a broker takes it
        gateway.call_soon(
            gateway.gateway.quotas.load, [({"ip": "127.1"}, {"connection_creation_rate": float(limit_per_sec)})]
        )
        port, accepted, lock, threads = gateway.gateway.bootstrap_address[1], [], threading.Lock(), []
        start = time.monotonic()
        while time.monotonic() - start < storm_s:  # ~60 attempts per second
            thread = threading.Thread(target=_attempt_connection, args=(port, accepted, lock))
            thread.start()
            threads.append(thread)
            time.sleep(1 / 60)
        for thread in threads:
            thread.join()
    finally:
        gateway.stop()
    # steady state: skip the first 2 s (burst allowance limit*(N-1)*W = 10 connections)
    steady = [t for t in accepted if start + 2 <= t < start + storm_s]
    rate = len(steady) / (storm_s - 2)
    assert rate <= 1.05 * limit_per_sec, rate
    assert rate >= 0.7 * limit_per_sec, rate  # the quota throttles, it does not block everything
    assert len(threads) - len(accepted) > 100  # most of the storm was refused
