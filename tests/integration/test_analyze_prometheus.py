"""``kconfigs analyze --prometheus-url``: a real Prometheus server (TLS + basic auth) scrapes a real
Kafka 3.9 broker's jmx_exporter javaagent and a ``kconfigs serve`` gateway's /metrics every second
while real clients produce; the report read through query_range is checked against the report of
a ``promtool tsdb dump`` of the same TSDB and period, and every failure is one line.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from harness.brokers import KraftBroker
from harness.cli import run_main
from harness.jmx_exporter import EXAMPLE_KAFKA_QUOTA_RULES, javaagent_flag
from harness.processes import free_ports
from harness.prometheus import SCRAPE_INTERVAL_S, PrometheusServer, WebSecurity
from harness.tls import generate_tls_material
from harness.versions import KAFKA_3_VERSION
from tests.integration.gateway_support import wait_for_port
from tests.integration.reliability_gateway import ServeProcess

pytestmark = pytest.mark.integration
RUN_S = 14
THROTTLED, STEADY, VIA_GATEWAY = "etl:nightly", "app-1", "gw-app"
THROTTLED_QUOTA, DEFAULT_QUOTA, GATEWAY_QUOTA = 100_000, 20_000_000, 50_000
USER, PASSWORD = "analyst", "s3cret pass"


class Scene:
    def __init__(self, broker: KraftBroker, prometheus: PrometheusServer, ca: Path, start_s: float, end_s: float):
        self.broker, self.prometheus, self.ca = broker, prometheus, ca
        self.start_s, self.end_s = start_s, end_s


def _kconfigs(*args: str) -> None:
    code, _, err = run_main(*args)
    assert code == 0, err


def _produce(bootstrap: str, client_id: str, size: int, pause_s: float, stop: threading.Event) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, acks=1, linger_ms=0)
    try:
        while not stop.is_set():
            producer.send("analyze-prometheus", b"x" * size).get(timeout=60)
            stop.wait(pause_s)
    finally:
        producer.close(timeout=10)


def _serve(workdir: Path, upstream: str) -> ServeProcess:
    """``kconfigs serve`` (a black box here) with its own store and a quota on VIA_GATEWAY."""
    store = workdir / "gateway.db"
    _kconfigs("init", "--store", str(store))
    _kconfigs(
        "--store",
        str(store),
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        VIA_GATEWAY,
        "--add-config",
        f"producer_byte_rate={GATEWAY_QUOTA}",
    )
    gateway = ServeProcess(workdir, upstream, store=str(store), usage_log=False)
    wait_for_port(gateway.metrics_port)
    return gateway


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    work = tmp_path_factory.mktemp("prometheus")
    tls = generate_tls_material(work / "tls")
    (agent_port,) = free_ports(1)
    (work / "rules.yaml").write_text(EXAMPLE_KAFKA_QUOTA_RULES)
    broker = KraftBroker(
        KAFKA_3_VERSION, work / "broker", extra_jvm_flags=(javaagent_flag(agent_port, work / "rules.yaml"),)
    )
    broker.start()
    gateway = None
    prometheus = None
    stop, threads = threading.Event(), []
    try:
        # a high default makes the broker record every client (no quota, no metrics)
        _kconfigs(
            "--bootstrap-server",
            broker.bootstrap,
            "--alter",
            "--entity-type",
            "clients",
            "--entity-default",
            "--add-config",
            f"producer_byte_rate={DEFAULT_QUOTA},consumer_byte_rate={DEFAULT_QUOTA}",
        )
        _kconfigs(
            "--bootstrap-server",
            broker.bootstrap,
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            THROTTLED,
            "--add-config",
            f"producer_byte_rate={THROTTLED_QUOTA}",
        )
        gateway = _serve(work, broker.bootstrap)
        security = WebSecurity(tls.server_cert_pem, tls.server_key_pem, tls.ca_pem, USER, PASSWORD)
        prometheus = PrometheusServer(
            work / "prom",
            {"kafka": f"127.0.0.1:{agent_port}", "gateway": f"127.0.0.1:{gateway.metrics_port}"},
            security,
        ).start()
        prometheus.wait_for_targets_up(2)
        threads = [
            threading.Thread(target=_produce, args=(broker.bootstrap, THROTTLED, 10_000, 0.01, stop)),
            threading.Thread(target=_produce, args=(broker.bootstrap, STEADY, 1_000, 0.05, stop)),
            threading.Thread(target=_produce, args=(gateway.bootstrap, VIA_GATEWAY, 5_000, 0.01, stop)),
        ]
        for thread in threads:
            thread.start()
        time.sleep(3)  # sensors exist before the period starts
        start_s = time.time()
        time.sleep(RUN_S)
        end_s = time.time()
        time.sleep(2 * SCRAPE_INTERVAL_S)  # the last scrape of the period is stored
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        yield Scene(broker, prometheus, tls.ca_pem, start_s, end_s)
    finally:
        stop.set()
        if prometheus is not None:
            prometheus.stop()
        if gateway is not None:
            gateway.stop()
        broker.stop()


def _prometheus_args(scene: Scene, *extra: str) -> list[str]:
    return [
        "--prometheus-url",
        scene.prometheus.url,
        "--since",
        f"{scene.start_s:.3f}",
        "--until",
        f"{scene.end_s:.3f}",
        "--step",
        str(SCRAPE_INTERVAL_S),
        "--prometheus-user",
        USER,
        "--prometheus-password",
        PASSWORD,
        "--prometheus-ca-file",
        str(scene.ca),
        *extra,
    ]


def _report(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / f"report-{time.monotonic_ns()}.json"
    code, _, err = run_main("analyze", "report", *args, "--format", "json", "--output", str(out), "--quiet")
    assert code == 0, err
    return json.loads(out.read_text())


def _by_entity(document: dict) -> dict:
    return {(e["kind"], e["user"], e["client_id"]): e for e in document["entities"]}


#: the broker's byte-rate series of a client, as the example jmx_exporter rules name it
STEADY_SERIES = f'kafka_server_quota_byte_rate{{resource="Produce",clientId="{STEADY}"}}'
THROTTLED_SERIES = 'kafka_server_quota_byte_rate{resource="Produce",clientId=~".*etl:nightly.*"}'
#: steps per query of the test's own reading (Prometheus answers at most 11,000 points)
ANSWER_PAGE = 5000


def _instants_answered(scene: Scene, step_s: float, series: str) -> int:
    """How many instants start + k × step of the scene's period Prometheus answers with a value
    of ``series``, asked page by page (each instant in exactly one page)."""
    steps = int((scene.end_s - scene.start_s) / step_s)
    total = 0
    for first in range(0, steps + 1, ANSWER_PAGE):
        last = min(first + ANSWER_PAGE - 1, steps)
        form = {
            "query": series,
            "start": f"{scene.start_s + first * step_s:.3f}",
            "end": f"{scene.start_s + last * step_s:.3f}",
            "step": step_s,
        }
        answer = scene.prometheus.api("/api/v1/query_range", form)
        assert answer["status"] == "success", answer
        total += sum(len(result["values"]) for result in answer["data"]["result"])
    return total


def test_report_from_prometheus_matches_a_tsdb_dump_of_the_same_period(scene, tmp_path):
    from_api = _report(tmp_path, *_prometheus_args(scene), "--bootstrap-server", scene.broker.bootstrap)
    # the samples Prometheus stored in the period, one a line with its own timestamp
    dump = tmp_path / "tsdb-dump.txt"
    dump.write_text(scene.prometheus.tsdb_dump(int(scene.start_s * 1000), int(scene.end_s * 1000)))
    from_dump = _report(
        tmp_path, str(dump), "--input-format", "prometheus", "--bootstrap-server", scene.broker.bootstrap
    )
    assert from_api["summary"]["malformed_lines"] == from_dump["summary"]["malformed_lines"] == 0
    assert from_api["summary"]["sources"] == from_dump["summary"]["sources"] == 2  # the broker and the gateway
    api, dumped = _by_entity(from_api), _by_entity(from_dump)
    assert set(api) == set(dumped)
    assert {("produce", None, THROTTLED), ("produce", None, STEADY), ("produce", None, VIA_GATEWAY)} <= set(api)
    assert not any('"' in (key[2] or "") for key in api)  # the JMX quotes of "etl:nightly" undone
    for key, row in api.items():
        other = dumped[key]
        assert (row["quota"], row["quota_level"]) == (other["quota"], other["quota_level"]), key
        # one query_range step per scrape: the same samples, give or take one at each end
        assert abs(row["samples"] - other["samples"]) <= 2, (key, row["samples"], other["samples"])
        assert row["max"] <= other["max"] * (1 + 1e-9)  # each step's value is a stored sample
        assert row["mean"] == pytest.approx(other["mean"], rel=0.15, abs=1.0), key
    throttled = api[("produce", None, THROTTLED)]
    assert throttled["quota"] == THROTTLED_QUOTA and throttled["throttled_fraction"] > 0.5
    assert api[("produce", None, VIA_GATEWAY)]["throttled_fraction"] > 0.2  # the gateway throttles it (its own quota)
    # every step Prometheus answers for the series is read (a loaded Prometheus skips scrapes:
    # what it stored, not RUN_S / SCRAPE_INTERVAL_S, is what there is to read)
    answered = _instants_answered(scene, float(SCRAPE_INTERVAL_S), THROTTLED_SERIES)
    assert answered >= 3 and abs(throttled["samples"] - answered) <= 1, (throttled["samples"], answered)


def test_long_ranges_are_paged_under_prometheus_points_limit(scene, tmp_path):
    step_s = 0.001  # 14 s at 1 ms: ~14,000 points a series, over Prometheus' 11,000 in one query
    refused = scene.prometheus.api(
        "/api/v1/query_range", {"query": "up", "start": scene.start_s, "end": scene.end_s, "step": step_s}
    )
    assert refused["status"] == "error" and "11,000 points" in refused["error"]
    args = _prometheus_args(scene)
    args[args.index("--step") + 1] = str(step_s)
    document = _report(tmp_path, *args)
    steady = _by_entity(document)[("produce", None, STEADY)]
    # every instant Prometheus itself answers with a value once, none twice: the pages join
    # without gaps or overlaps (a loaded Prometheus that skipped scrapes answers fewer instants)
    answered = _instants_answered(scene, step_s, STEADY_SERIES)
    assert answered > 1000 and abs(steady["samples"] - answered) <= 2, (steady["samples"], answered)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--prometheus-password": "wrong"}, "refused the request (HTTP 401 Unauthorized)"),
        ({"--prometheus-ca-file": None}, "TLS to https://127.0.0.1:"),
        ({"--prometheus-url": "https://127.0.0.1:1"}, "Cannot reach Prometheus at https://127.0.0.1:1"),
        ({"--prometheus-match": 'job=~"("'}, "rejected the query (bad_data)"),
        ({"--since": "2001-01-01T00:00:00Z", "--until": "2001-01-02T00:00:00Z"}, "has no Kafka quota series in"),
    ],
)
def test_prometheus_failures_are_one_line(scene, change, message):
    args = _prometheus_args(scene)
    for option, value in change.items():
        at = args.index(option) if option in args else len(args)
        args[at : at + 2] = [] if value is None else [option, value]
    code, out, err = run_main("analyze", "report", *args, "--quiet")
    assert (code, out) == (1, "") and message in err and err.count("\n") == 1, err


def test_insecure_skips_certificate_checks(scene, tmp_path):
    args = _prometheus_args(scene)
    at = args.index("--prometheus-ca-file")
    args[at : at + 2] = ["--prometheus-insecure"]
    assert _report(tmp_path, *args)["summary"]["samples"] > 0
