"""``kconfigs serve`` end to end: embedded store, live quota changes during traffic (applied to
the next request, connections kept), quota admin through Kafka's API on an upstream that lacks
it (tansu), the Prometheus endpoint, and SIGTERM draining."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

import pytest

from kconfigs.model import QuotaEntity
from kconfigs.stores.sqlite import SqliteStore
from kconfigs_enforcement import rates
from tests.integration.gateway_support import (
    USAGE_WINDOW_MS,
    free_port,
    mean_rate,
    read_usage,
    usage_inside,
    wait_for_port,
)

pytestmark = pytest.mark.integration
QUOTA_BYTES_PER_SEC = 100_000


@pytest.fixture
def served(tansu_upstream, tmp_path):
    store_path, usage, port, metrics_port = tmp_path / "quotas.db", tmp_path / "usage.jsonl", free_port(), free_port()
    SqliteStore(str(store_path)).close()
    toml = tmp_path / "gateway.toml"
    toml.write_text(
        f"quota_window_num = 2\nusage_log_window_ms = {USAGE_WINDOW_MS}\nlog_format = "
        '"json"\nquota_admin_principals = ["*"]\ndrain_timeout_ms = 5000\n'
    )
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kconfigs",
            "serve",
            "--upstream",
            tansu_upstream,
            "--listen",
            f"127.0.0.1:{port}",
            "--store",
            str(store_path),
            "--metrics-listen",
            f"127.0.0.1:{metrics_port}",
            "--usage-log",
            str(usage),
            "--config",
            str(toml),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    wait_for_port(port)
    yield {
        "bootstrap": f"127.0.0.1:{port}",
        "store": str(store_path),
        "usage": usage,
        "metrics_port": metrics_port,
        "proc": proc,
        "log": tmp_path / "serve.log",
    }
    if proc.poll() is None:
        proc.kill()
    log.close()


def _kconfigs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kconfigs", *args], capture_output=True, text=True, timeout=60)


def _produce_for(bootstrap: str, topic: str, seconds: float, errors: list) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="live", linger_ms=5)
    try:
        start, futures = time.time(), []
        while time.time() - start < seconds:
            futures.append(producer.send(topic, b"v" * 1024))
            if len(futures) > 1024:
                futures.pop(0).get(60)
        producer.flush(60)
    except Exception as err:  # surfaced by the test
        errors.append(err)
    finally:
        producer.close()


def test_quota_set_through_kafka_api_applies_live_and_sigterm_drains(served):
    bootstrap, topic, errors = served["bootstrap"], f"live-{uuid.uuid4().hex[:6]}", []
    producer = threading.Thread(target=_produce_for, args=(bootstrap, topic, 16, errors))
    producer.start()
    time.sleep(5)
    # tansu has no AlterClientQuotas: the gateway answers from its embedded store (quota_admin=auto)
    changed_at_ms = int(time.time() * 1000)
    result = _kconfigs(
        "--bootstrap-server",
        bootstrap,
        "--alter",
        "--add-config",
        f"producer_byte_rate={QUOTA_BYTES_PER_SEC}",
        "--entity-type",
        "clients",
        "--entity-name",
        "live",
    )
    assert result.returncode == 0, result.stderr
    producer.join()
    produced_until_ms = int(time.time() * 1000)
    assert not errors, errors

    stored = SqliteStore(served["store"]).snapshot()
    assert [(r.entity, dict(r.configs)) for r in stored] == [
        (QuotaEntity(client_id="live"), {"producer_byte_rate": str(QUOTA_BYTES_PER_SEC)})
    ]
    described = _kconfigs(
        "--bootstrap-server", bootstrap, "--describe", "--entity-type", "clients", "--entity-name", "live"
    )
    assert described.returncode == 0 and f"producer_byte_rate={QUOTA_BYTES_PER_SEC}" in described.stdout, described

    metrics = urllib.request.urlopen(f"http://127.0.0.1:{served['metrics_port']}/metrics", timeout=10).read().decode()
    assert 'kafka_server_produce_byte_rate{client_id="live"' in metrics
    assert "kconfigs_gateway_open_connections" in metrics

    served["proc"].send_signal(signal.SIGTERM)
    assert served["proc"].wait(30) == 0
    lines = [l for l in read_usage(served["usage"]) if l["client_id"] == "live" and l["kind"] == "produce"]
    before = [l for l in lines if l["ts_ms"] + l["window_ms"] <= changed_at_ms]
    after, after_windows = usage_inside(lines, changed_at_ms + 4000, produced_until_ms, USAGE_WINDOW_MS)
    assert before and sum(l["throttle_ms"] for l in before) == 0
    assert min(l["value"] for l in before[1:]) > 2 * QUOTA_BYTES_PER_SEC  # well above the coming quota, unthrottled
    assert after and sum(l["throttle_ms"] for l in after) > 0
    assert all(l["quota"] == QUOTA_BYTES_PER_SEC for l in after)
    rate_after = mean_rate(after, after_windows, USAGE_WINDOW_MS)
    assert rate_after <= 1.5 * QUOTA_BYTES_PER_SEC, (
        rate_after
    )  # held near the new quota (accuracy: test_gateway_quotas)
    log_lines = [json.loads(l) for l in served["log"].read_text().splitlines() if l.startswith("{")]
    assert any("draining" in l["msg"] for l in log_lines)
    # the start-up line says what the operator got from the install: native data plane and core
    data_path = "native (Rust"
    rate_core = "native" if rates.NATIVE else "pure Python"
    assert any(
        l["msg"].startswith(f"data path: {data_path}") and f"rate core: {rate_core}" in l["msg"] for l in log_lines
    ), log_lines


def test_a_usage_log_rotated_like_logrotate_does_goes_on_in_a_new_file(served):
    """logrotate's default renames the log and its compress step deletes the renamed file later:
    a gateway writing by descriptor would have filled a file nobody reads, then a deleted one."""
    bootstrap, usage, errors = served["bootstrap"], served["usage"], []
    _produce_for(bootstrap, f"rot-{uuid.uuid4().hex[:6]}", 3, errors)
    time.sleep(2 * USAGE_WINDOW_MS / 1000)  # the last busy window is written
    rotated = usage.with_name("usage.jsonl.1")
    usage.rename(rotated)
    rotated_at_ms = int(time.time() * 1000)
    _produce_for(bootstrap, f"rot-{uuid.uuid4().hex[:6]}", 3, errors)
    served["proc"].send_signal(signal.SIGTERM)
    assert served["proc"].wait(30) == 0 and not errors, errors
    old = [l for l in read_usage(rotated) if l["client_id"] == "live"]
    new = [l for l in read_usage(usage) if l["client_id"] == "live"]
    assert old and new, (len(old), len(new))
    assert max(l["ts_ms"] for l in old) < rotated_at_ms <= min(l["ts_ms"] for l in new) + 2 * USAGE_WINDOW_MS


def test_a_store_file_replaced_while_serving_is_said_not_served_in_silence(served, tmp_path):
    """`mv new.db quotas.db` (how configuration management deploys a file): the gateway kept
    the replaced file open, enforcing and answering its quotas forever, in silence. Now it says
    so in its log, keeps enforcing the last quotas and answers quota describes with an error
    naming the file (test_store_safety: a new opening reads the new file)."""
    replacement = tmp_path / "replacement.db"
    store = SqliteStore(str(replacement))
    store.alter(QuotaEntity(client_id="swapped"), lambda _current: {"producer_byte_rate": "12345"})
    store.close()
    os.replace(replacement, served["store"])
    said = f"Embedded store {served['store']} was replaced or removed while open: restart to use the file there now"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and said not in served["log"].read_text():
        time.sleep(0.2)
    described = _kconfigs("--bootstrap-server", served["bootstrap"], "--describe", "--entity-type", "clients")
    assert described.returncode != 0 and described.stdout == "", described
    assert said in described.stderr, described.stderr
    served["proc"].send_signal(signal.SIGTERM)
    assert served["proc"].wait(30) == 0
    warnings = [
        json.loads(line)["msg"]
        for line in served["log"].read_text().splitlines()
        if line.startswith("{") and said in line
    ]
    assert warnings == [f"embedded store unreadable, keeping last quotas: {said}"], warnings
