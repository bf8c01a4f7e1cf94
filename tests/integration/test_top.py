"""``kconfigs top`` as an operator runs it: against a real Kafka 4.x broker with the jmx_exporter
javaagent (jmx_exporter's example Kafka rules: the ``resource`` label, a JMX-quoted client-id),
real producers under real quotas set through the cluster, the quotas read from the cluster itself.

The snapshot (``--once -o json``) is checked against the broker's own metrics and what the
clients sent; the full screen runs in tmux (send-keys, capture-pane): the rows, the effective
quota and its level, sorting, filtering, a source that goes away, quitting.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.brokers import KraftBroker
from harness.cli import run_main
from harness.jmx_exporter import EXAMPLE_KAFKA_QUOTA_RULES, javaagent_flag
from harness.processes import free_ports
from harness.versions import KAFKA_4_VERSION

pytestmark = pytest.mark.integration

TOPIC = "top-traffic"
THROTTLED = "etl:nightly"  # JMX quotes it; its own client-id quota (level 7)
THROTTLED_QUOTA = 100_000  # B/s; it offers about 1 MB/s
STEADY = "app-1"  # inherits the <default> client quota (level 8), far above what it sends
DEFAULT_QUOTA = 20_000_000
SETTLE_S = 14  # Kafka's quota window is 11 s: rates settle after one whole window


class Traffic:
    """Producers running for the module, each keeping (time, bytes) of its acknowledged sends."""

    def __init__(self, broker: KraftBroker, bootstrap: str | None = None, clients: dict | None = None) -> None:
        self.bootstrap = bootstrap or broker.bootstrap
        self.stop = threading.Event()
        clients = clients or {THROTTLED: (10_000, 0.01), STEADY: (2_000, 0.05)}  # (record size, pause s)
        self.sent: dict[str, deque] = {client: deque(maxlen=100_000) for client in clients}
        self.threads = [
            threading.Thread(target=self._produce, args=(client, size, pause_s), daemon=True)
            for client, (size, pause_s) in clients.items()
        ]

    def _produce(self, client_id: str, size: int, pause_s: float) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, client_id=client_id, acks=1, linger_ms=0)
        try:
            while not self.stop.is_set():
                producer.send(TOPIC, b"x" * size).get(timeout=60)
                self.sent[client_id].append((time.monotonic(), size))
                self.stop.wait(pause_s)
        finally:
            producer.close(timeout=10)

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def rate(self, client_id: str, seconds: float) -> float:
        """Bytes per second the client had acknowledged over the last ``seconds``."""
        since = time.monotonic() - seconds
        return sum(size for at, size in list(self.sent[client_id]) if at >= since) / seconds


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, request):
    work = tmp_path_factory.mktemp("top")
    (agent_port,) = free_ports(1)
    (work / "rules.yaml").write_text(EXAMPLE_KAFKA_QUOTA_RULES)
    broker = KraftBroker(
        KAFKA_4_VERSION, work / "broker", extra_jvm_flags=(javaagent_flag(agent_port, work / "rules.yaml"),)
    )
    broker.start()
    request.addfinalizer(broker.stop)
    for args in (
        ("--entity-type", "clients", "--entity-default", "--add-config", f"producer_byte_rate={DEFAULT_QUOTA}"),
        (
            "--entity-type",
            "clients",
            "--entity-name",
            THROTTLED,
            "--add-config",
            f"producer_byte_rate={THROTTLED_QUOTA}",
        ),
    ):
        code, _, err = run_main("--bootstrap-server", broker.bootstrap, "--alter", *args)
        assert code == 0, err
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])
    admin.close()
    traffic = Traffic(broker)
    for thread in traffic.threads:
        thread.start()
    request.addfinalizer(traffic.finish)
    time.sleep(SETTLE_S)
    return broker, f"127.0.0.1:{agent_port}", traffic, work


def _top(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kconfigs", "top", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def _broker_metric(agent: str, resource: str, client: str, attribute: str) -> float:
    """The broker's own value, from its exporter page (jmx_exporter's example rules)."""
    with urllib.request.urlopen(f"http://{agent}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(f"kafka_server_quota_{attribute}{{") and f'resource="{resource}"' in line:
                if f'clientId="{client}"' in line or f'clientId="\\"{client}\\""' in line:
                    return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {attribute} for {client} on the broker's page")


def _rows_by_client(document: dict) -> dict:
    return {(r["type"], r["client_id"]): r for r in document["rows"]}


def test_snapshot_json_matches_the_brokers_own_metrics_and_the_quotas_in_force(cluster):
    broker, agent, traffic, _ = cluster
    done = _top("--jmx-exporter", agent, "--bootstrap-server", broker.bootstrap, "--once", "-o", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["sources"] == [{"name": f"jmx {agent}", "reachable": True, "error": None}]
    assert document["quota_source"] == f"Kafka cluster {broker.bootstrap} (admin API, PLAINTEXT) (--bootstrap-server)"
    rows = _rows_by_client(document)
    throttled, steady = rows[("produce", THROTTLED)], rows[("produce", STEADY)]
    assert (throttled["quota"], throttled["level"]) == (THROTTLED_QUOTA, 7)
    assert throttled["quota_path"] == "/config/clients/etl%3Anightly"
    assert (steady["quota"], steady["level"], steady["quota_path"]) == (DEFAULT_QUOTA, 8, "/config/clients/<default>")
    assert throttled["throttled"] and throttled["throttle_ms"] > 0
    assert not steady["throttled"]
    assert throttled["percent_of_quota"] == pytest.approx(100 * throttled["rate"] / THROTTLED_QUOTA)
    # the broker's own Rate, read right after: the same figure (both are its 11 s window)
    assert throttled["rate"] == pytest.approx(_broker_metric(agent, "Produce", THROTTLED, "byte_rate"), rel=0.10)
    # and what the clients had acknowledged over the broker's window
    assert steady["rate"] == pytest.approx(traffic.rate(STEADY, 11), rel=0.10)
    assert throttled["rate"] == pytest.approx(traffic.rate(THROTTLED, 11), rel=0.10)
    # sorted by percent of quota: the throttled client first
    assert document["rows"][0]["client_id"] == THROTTLED


def test_fail_above_exits_3_when_an_entity_is_over_and_0_when_none_is(cluster):
    broker, agent, _, _ = cluster
    over = _top("--jmx-exporter", agent, "--bootstrap-server", broker.bootstrap, "--fail-above", "50")
    assert over.returncode == 3, over.stderr
    assert THROTTLED in over.stdout  # piped: the table, one line per row
    calm = _top("--jmx-exporter", agent, "--bootstrap-server", broker.bootstrap, "--fail-above", "500")
    assert calm.returncode == 0, calm.stderr


def test_an_unreachable_source_is_one_line_in_the_snapshot_and_the_other_still_counts(cluster):
    broker, agent, _, _ = cluster
    (dead,) = free_ports(1)
    done = _top("--jmx-exporter", agent, "--jmx-exporter", f"127.0.0.1:{dead}", "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 0, done.stderr
    assert f"# jmx 127.0.0.1:{dead}: unreachable (cannot reach" in done.stdout
    assert THROTTLED in done.stdout


class _Replay(http.server.BaseHTTPRequestHandler):
    """Serves one page captured from the broker's exporter: a second "broker" that can go away."""

    page = b""

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args):
        pass


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def _screen(session: str, escapes: bool = False) -> str:
    return _tmux("capture-pane", "-p", *(["-e"] if escapes else []), "-t", session)


def _wait_for(session: str, predicate, limit_s: float = 20.0, escapes: bool = False) -> str:
    deadline = time.monotonic() + limit_s
    while True:
        screen = _screen(session, escapes)
        if predicate(screen):
            return screen
        assert time.monotonic() < deadline, f"screen never showed what was awaited:\n{screen}"
        time.sleep(0.3)


def _dim_text(coloured: str) -> str:
    """The text tmux shows dimmed: it writes each attribute change once (SGR 2 on, 0 or 22 off)."""
    dim, out = False, []
    for part in re.split(r"(\x1b\[[0-9;]*m)", coloured):
        if part.startswith("\x1b["):
            for code in part[2:-1].split(";"):
                dim = True if code == "2" else False if code in ("", "0", "22") else dim
        elif dim:
            out.append(part)
    return "".join(out)


def _row_order(screen: str) -> list[str]:
    return [name for line in screen.splitlines() for name in (THROTTLED, STEADY) if f" {name} " in f" {line} "]


@pytest.fixture
def tmux_session(tmp_path):
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: run .ci/setup-test-env")
    session = f"kconfigs-top-{os.getpid()}"
    yield session
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_full_screen_shows_rows_sorts_filters_greys_a_lost_source_and_quits(cluster, tmux_session, tmp_path):
    broker, agent, _, _ = cluster
    with urllib.request.urlopen(f"http://{agent}/metrics", timeout=10) as response:
        _Replay.page = response.read()
    replay = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Replay)
    threading.Thread(target=replay.serve_forever, daemon=True).start()
    second = f"127.0.0.1:{replay.server_address[1]}"
    command = (
        f"env -u COLUMNS -u LINES {sys.executable} -m kconfigs top --interval 1 --jmx-exporter {agent} "
        f"--jmx-exporter {second} --bootstrap-server {broker.bootstrap}; echo EXITED $?; sleep 30"
    )
    env = ["-e", f"KCONFIGS_HOME={tmp_path}"]
    _tmux("new-session", "-d", "-s", tmux_session, "-x", "200", "-y", "40", *env, command)
    screen = _wait_for(tmux_session, lambda s: THROTTLED in s and STEADY in s)
    throttled_line = next(line for line in screen.splitlines() if THROTTLED in line)
    assert "100.00 KB/s" in throttled_line and "7 clients/etl%3Anightly" in throttled_line
    assert " yes " in throttled_line
    assert _row_order(screen) == [THROTTLED, STEADY]  # percent of quota, highest first
    assert f"● jmx {agent}" in screen and f"● jmx {second}" in screen

    _tmux("send-keys", "-t", tmux_session, "u")  # sort by user, then client-id: app-1 < etl:nightly
    _wait_for(tmux_session, lambda s: "sorted by user" in s and _row_order(s) == [STEADY, THROTTLED])

    _tmux("send-keys", "-t", tmux_session, "/", "n", "i", "g", "h", "t", "Enter")
    _wait_for(tmux_session, lambda s: "filter: night" in s and _row_order(s) == [THROTTLED])
    _tmux("send-keys", "-t", tmux_session, "Escape")
    _wait_for(tmux_session, lambda s: "filter:" not in s and len(_row_order(s)) == 2)

    replay.shutdown()
    replay.server_close()  # the second "broker" goes away: its values stay, greyed
    screen = _wait_for(tmux_session, lambda s: f"✖ jmx {second}: unreachable" in s)
    assert THROTTLED in screen
    coloured = _screen(tmux_session, escapes=True)
    assert THROTTLED in _dim_text(coloured)

    _tmux("send-keys", "-t", tmux_session, "q")
    _wait_for(tmux_session, lambda s: "EXITED 0" in s)


GATEWAY_CLIENT = "through-gateway"
GATEWAY_QUOTA = 50_000  # B/s; the client offers about 500 KB/s


@pytest.fixture(scope="module")
def gateway(cluster, tmp_path_factory):
    """``kconfigs serve`` in front of the broker, enforcing its own store's quota on one client."""
    from gateway_support import free_port, stop_process, wait_for_port

    broker, _, _, _ = cluster
    work = tmp_path_factory.mktemp("top-gateway")
    store = str(work / "quotas.db")
    code, _, err = run_main("init", "--store", store)
    assert code == 0, err
    code, _, err = run_main(
        "alter", "--store", store, "--client-id", GATEWAY_CLIENT, "--set", f"producer_byte_rate={GATEWAY_QUOTA}"
    )
    assert code == 0, err
    listen, metrics = free_port(), free_port()
    log = open(work / "serve.log", "wb")
    serve = subprocess.Popen(
        [sys.executable, "-m", "kconfigs", "serve", "--upstream", broker.bootstrap, "--listen", f"127.0.0.1:{listen}"]
        + ["--store", store, "--metrics-listen", f"127.0.0.1:{metrics}"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    wait_for_port(listen)
    traffic = Traffic(broker, bootstrap=f"127.0.0.1:{listen}", clients={GATEWAY_CLIENT: (10_000, 0.02)})
    for thread in traffic.threads:
        thread.start()
    time.sleep(SETTLE_S)
    yield store, f"127.0.0.1:{metrics}", traffic
    traffic.finish()
    stop_process(serve, 30)
    log.close()


def test_snapshot_from_a_gateway_matches_its_clients_and_its_store(gateway):
    store, metrics, traffic = gateway
    done = _top("--gateway", metrics, "--store", store, "--once", "-o", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["quota_source"] == f"embedded store {store} (--store)"
    row = _rows_by_client(document)[("produce", GATEWAY_CLIENT)]
    assert (row["quota"], row["level"], row["quota_path"]) == (GATEWAY_QUOTA, 7, f"/config/clients/{GATEWAY_CLIENT}")
    assert row["throttled"]
    assert row["rate"] == pytest.approx(traffic.rate(GATEWAY_CLIENT, 11), rel=0.10)
    assert row["percent_of_quota"] > 90  # held at its quota (Kafka's enforcement lets a window overshoot a little)


def test_a_prometheus_server_gives_the_same_rows_as_the_exporter_it_scrapes(cluster, tmp_path):
    """Instant queries: the latest sample of each quota series, one source per scraped instance."""
    from harness.prometheus import PrometheusServer

    broker, agent, _, _ = cluster
    prometheus = PrometheusServer(tmp_path / "prometheus", {"kafka": agent}).start()
    try:
        prometheus.wait_for_targets_up(1)
        deadline = time.monotonic() + 30
        while not prometheus.api("/api/v1/query", {"query": "kafka_server_quota_byte_rate"})["data"]["result"]:
            assert time.monotonic() < deadline, "Prometheus never stored the exporter's quota series"
            time.sleep(0.5)
        common = ("--bootstrap-server", broker.bootstrap, "--once", "-o", "json")
        # both snapshots at once: a throttled client's Rate moves from one second to the next, and
        # Prometheus' latest sample is at most one scrape (1 s) old
        with ThreadPoolExecutor(2) as pool:
            answers = pool.map(
                lambda source: _top(*source, *common), (("--prometheus-url", prometheus.url), ("--jmx-exporter", agent))
            )
            via_prometheus, direct = (json.loads(done.stdout) for done in answers)
    finally:
        prometheus.stop()
    assert [s["name"] for s in via_prometheus["sources"]] == [f"prometheus {prometheus.url}"]
    got, want = _rows_by_client(via_prometheus), _rows_by_client(direct)
    assert got.keys() == want.keys()
    for key, row in want.items():
        assert (got[key]["quota"], got[key]["level"]) == (row["quota"], row["level"])
        assert got[key]["rate"] == pytest.approx(row["rate"], rel=0.10)
        assert list(got[key]["per_source"]) == [f"prometheus {prometheus.url} {agent}"]


def test_full_screen_on_a_gateway_shows_its_client_at_its_quota(gateway, tmux_session, tmp_path):
    store, metrics, _ = gateway
    command = (
        f"env -u COLUMNS -u LINES {sys.executable} -m kconfigs top --interval 1 --gateway {metrics} "
        f"--store {store}; echo EXITED $?; sleep 30"
    )
    _tmux("new-session", "-d", "-s", tmux_session, "-x", "200", "-y", "30", "-e", f"KCONFIGS_HOME={tmp_path}", command)
    screen = _wait_for(tmux_session, lambda s: GATEWAY_CLIENT in s)
    line = next(line for line in screen.splitlines() if GATEWAY_CLIENT in line)
    assert "50.00 KB/s" in line and f"7 clients/{GATEWAY_CLIENT}" in line and " yes " in line
    assert f"● gateway {metrics}" in screen and f"quotas: embedded store {store} (--store)" in screen
    _tmux("send-keys", "-t", tmux_session, "q")
    _wait_for(tmux_session, lambda s: "EXITED 0" in s)
