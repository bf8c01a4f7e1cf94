"""Three ``kconfigs serve`` instances of one fleet in front of one Kafka 4.x broker hold each
client to its quota in total: connections split 1:1:1 (kafka-python, kafka-python, librdkafka) and
all on one instance (librdkafka and kafka-python), measured over two of Kafka's 11 s quota windows
with the gateways' usage logs; one instance killed (SIGKILL), the other two take its share within
the report expiry (measured over one window).

Each gateway has its own embedded store with the same quota, so the broker holds none: the total
is the fleet's doing alone (without the fleet it is up to 3x the quota)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.compat_support import run_kconfigs
from tests.integration.gateway_support import (
    USAGE_WINDOW_MS,
    ServeProcess,
    mean_rate,
    produce_until,
    read_usage,
    stop_process,
    usage_inside,
    wait_until,
)

pytestmark = pytest.mark.integration
QUOTA = 600_000  # bytes/s, each client id (a default client quota)
#: Kafka's default quota window (11 samples of 1 s)
KAFKA_WINDOW_S = 11
#: the steady state is measured over two windows: these clients' throttle cycles (a burst, a pause)
#: move one window's mean by up to 10 % through a single gateway too, depending on where it is cut
STEADY_S = 2 * KAFKA_WINDOW_S
#: the gateways' quota.window.num (samples of 1 s), as in quota_accuracy.py: a fresh sensor lets a
#: burst of (N - 1) W of its share through before its first throttle, and every throttle cycle is
#: a burst and a pause as long as the window; with 11 samples an 11 s measurement holds a burst or
#: none, with 2 it holds five cycles
QUOTA_WINDOW_NUM = 2
#: from the producers' start to the steady state: the first burst, one window and the shares settling
WARM_UP_S = 6
#: from the kill to a measurement: the report expiry (1 s), a period and the smoothing, with slack
AFTER_KILL_S = 4

LIBRDKAFKA_PRODUCER = r"""
import sys, time
import confluent_kafka as ck
bootstrap, client_id, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
producer = ck.Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5, "acks": 1,
                        "queue.buffering.max.kbytes": 256, "batch.size": 16384,
                        "max.in.flight.requests.per.connection": 1})
end = time.time() + seconds
while time.time() < end:
    try:
        producer.produce(client_id + "-t", b"r" * 1024)
    except BufferError:
        producer.poll(0.05)
    producer.poll(0)
producer.flush(10)
"""


class FleetGateway(ServeProcess):
    """``kconfigs serve --fleet`` as a process with its own embedded store, metrics and usage log."""

    def __init__(self, upstream: str, workdir: Path, fleet: str):
        workdir.mkdir(parents=True, exist_ok=True)
        from kconfigs.stores.sqlite import SqliteStore

        self.store = workdir / "quotas.db"
        SqliteStore(str(self.store)).close()
        alter = ["alter", "--store", str(self.store), "--client-default", "--set", f"producer_byte_rate={QUOTA}"]
        assert run_kconfigs(alter).rc == 0
        settings = workdir / "gateway.toml"
        settings.write_text(f"quota_window_num = {QUOTA_WINDOW_NUM}\n")
        super().__init__(
            workdir, "--upstream", upstream, "--store", str(self.store), "--fleet", fleet, "--config", str(settings)
        )

    def members(self) -> int:
        found = re.search(r"(\d+) members", self.get("/readyz")[1])
        return int(found.group(1)) if found else 0

    def share(self, client_id: str) -> float | None:
        pattern = r'^kconfigs_fleet_share\{client_id="%s",fleet="[^"]+",quota_type="Produce",user="[^"]*"\} (\S+)$'
        found = re.search(pattern % re.escape(client_id), self.get("/metrics")[1], re.M)
        return float(found.group(1)) if found else None


@pytest.fixture(scope="module")
def fleet(kraft_broker, tmp_path_factory):
    workdir, name = tmp_path_factory.mktemp("fleet"), f"f{uuid.uuid4().hex[:8]}"
    gateways = []
    try:
        for i in range(3):
            gateways.append(FleetGateway(kraft_broker.bootstrap, workdir / f"g{i}", name))
        assert wait_until(lambda: all(g.members() == 3 for g in gateways), 20), [g.get("/readyz") for g in gateways]
        yield gateways
    finally:
        for gateway in gateways:
            gateway.stop()


def _librdkafka(bootstrap: str, client_id: str, seconds: float) -> subprocess.Popen:
    argv = [sys.executable, "-c", LIBRDKAFKA_PRODUCER, bootstrap, client_id, str(seconds)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


#: a usage-log window is written up to a window after it closes (the periodic flush)
FLUSHED_AFTER_S = 2.5


def _fleet_rate(gateways, client_id: str, start_ms: float, end_ms: float) -> float:
    """The client's produce rate through every gateway, over the whole windows in [start, end]
    (called ``FLUSHED_AFTER_S`` after ``end_ms``: a window not written yet would count as idle)."""
    lines = [
        line
        for gateway in gateways
        for line in read_usage(gateway.usage)
        if line["client_id"] == client_id and line["kind"] == "produce"
    ]
    inside, windows = usage_inside(lines, start_ms, end_ms, USAGE_WINDOW_MS)
    return mean_rate(inside, windows, USAGE_WINDOW_MS)


def test_a_fleet_holds_each_client_to_its_quota_in_total_whatever_the_split_and_after_a_kill(fleet):
    suffix = uuid.uuid4().hex[:6]
    split_id, one_id = f"split-{suffix}", f"one-{suffix}"
    run_s = WARM_UP_S + STEADY_S + AFTER_KILL_S + KAFKA_WINDOW_S + 2 * FLUSHED_AFTER_S + 4
    stop, errors = threading.Event(), []
    # 1:1:1: kafka-python on the first and second instances, librdkafka on the third (the one
    # killed: a process, stopped at the end whatever its connection does)
    # all on one: librdkafka and kafka-python, both on the first instance
    rdkafka = [_librdkafka(fleet[2].bootstrap, split_id, run_s), _librdkafka(fleet[0].bootstrap, one_id, run_s)]
    threads = [
        threading.Thread(target=produce_until, args=(g.bootstrap, cid, stop, errors), daemon=True)
        for g, cid in ((fleet[0], split_id), (fleet[1], split_id), (fleet[0], one_id))
    ]
    for thread in threads:
        thread.start()
    try:
        started_ms = time.time() * 1000
        time.sleep(WARM_UP_S + STEADY_S + 1)
        steady_end_ms = time.time() * 1000
        steady_start_ms = steady_end_ms - (STEADY_S + 1) * 1000
        assert steady_start_ms >= started_ms + WARM_UP_S * 1000
        time.sleep(FLUSHED_AFTER_S)
        split_rate = _fleet_rate(fleet, split_id, steady_start_ms, steady_end_ms)
        one_rate = _fleet_rate(fleet, one_id, steady_start_ms, steady_end_ms)
        shares = [g.share(split_id) for g in fleet]
        assert 0.95 * QUOTA <= split_rate <= 1.05 * QUOTA, (split_rate, shares)
        assert 0.95 * QUOTA <= one_rate <= 1.05 * QUOTA, one_rate
        # the usage log carries the fleet's total (its demand: a held instance asks 5 % over its share)
        fleet_rates = [
            line["fleet_rate"]
            for line in read_usage(fleet[0].usage)
            if line["client_id"] == split_id
            and line["kind"] == "produce"
            and steady_start_ms <= line["ts_ms"] <= steady_end_ms
        ]
        assert fleet_rates and 0.9 * QUOTA <= sorted(fleet_rates)[len(fleet_rates) // 2] <= 1.2 * QUOTA, fleet_rates
        # each instance computes its share from the others' last reports: a period apart at most
        assert sum(shares) == pytest.approx(QUOTA, rel=0.05), shares

        fleet[2].proc.kill()  # SIGKILL: no leaving report; the others expire it
        killed_ms = time.time() * 1000
        assert wait_until(lambda: fleet[0].members() == 2 and fleet[1].members() == 2, AFTER_KILL_S)
        time.sleep(AFTER_KILL_S + KAFKA_WINDOW_S + 1 - (time.time() * 1000 - killed_ms) / 1000)
        after_end_ms = time.time() * 1000
        time.sleep(FLUSHED_AFTER_S)
        after_rate = _fleet_rate(fleet[:2], split_id, killed_ms + AFTER_KILL_S * 1000, after_end_ms)
        survivors = [fleet[0].share(split_id), fleet[1].share(split_id)]
        assert 0.90 * QUOTA <= after_rate <= 1.10 * QUOTA, (after_rate, survivors)
        assert sum(survivors) == pytest.approx(QUOTA, rel=0.05), survivors
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        for proc in rdkafka:
            stop_process(proc, 15)
    assert not errors, errors
