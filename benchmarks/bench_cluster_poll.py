"""What `kconfigs serve --bootstrap-server` pays to follow a KRaft cluster's quotas: a controller has
no change notifications, so the gateway reads every client quota (DescribeClientQuotas, no filter)
once per poll interval and installs a new snapshot when one changed. Measured with N entities on a
real Kafka 4.x KRaft broker: one full read, one install of N entities, and the time from an
AlterClientQuotas of one entity to the gateway's quota state holding it (the same reloader and
quota state `serve` runs).

Run: python benchmarks/bench_cluster_poll.py [--entities 100000] [--changes 5]
Needs .ci/setup-test-env (Java, Kafka 4.x jars).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import machine, write_section  # noqa: E402

from harness.brokers import KraftBroker  # noqa: E402
from harness.versions import KAFKA_4_VERSION  # noqa: E402
from kconfigs.kafka_admin.client import AdminClient  # noqa: E402
from kconfigs.kafka_admin.messages import QuotaOp, build_alter_request, read_alter_response  # noqa: E402
from kconfigs.kafka_admin.security import ClientSecurity  # noqa: E402
from kconfigs.model import MATCH_ALL, QuotaEntity  # noqa: E402
from kconfigs.stores.admin_api import WATCH_INTERVAL_MS, open_admin_store  # noqa: E402
from kconfigs_enforcement.gateway.quotas import QuotaGate  # noqa: E402
from kconfigs_enforcement.gateway.reload import QuotaReloader, parsed_quotas  # noqa: E402

BATCH = 2000


def fill(bootstrap: str, entities: int) -> None:
    """``entities`` client-id quotas, written BATCH entities per AlterClientQuotas."""
    client = AdminClient(bootstrap, ClientSecurity(), controller=False, request_timeout_ms=60_000)
    try:
        for start in range(0, entities, BATCH):
            changes = [
                (QuotaEntity(client_id=f"bench-{i:06d}"), [QuotaOp("producer_byte_rate", 1_000_000.0 + i)])
                for i in range(start, min(start + BATCH, entities))
            ]
            failed = [
                e
                for e, err in read_alter_response(client.send(49, partial(build_alter_request, changes, False)))
                if err
            ]
            if failed:
                raise SystemExit(f"alter failed for {len(failed)} entities, e.g. {failed[0]}")
    finally:
        client.close()


def timed(fn, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def change_latencies(store, changes: int) -> list[float]:
    """Seconds from an alter's answer to the installed snapshot holding the new value, each alter
    at a random point of the poll cycle."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    quotas, installed = QuotaGate(), threading.Condition()
    latest: dict = {}

    def install(records) -> None:
        quotas.load(records)
        with installed:
            latest.update({tuple(sorted(e.items())): q for e, q in records})
            installed.notify_all()

    reloader = QuotaReloader(store, loop, install)
    reloader.start()
    target = QuotaEntity(client_id="bench-000000")
    key = tuple(sorted(target.to_json().items()))
    latencies = []
    try:
        with installed:
            installed.wait_for(lambda: key in latest, 300)
        for n in range(changes):
            value = 5_000.0 + n
            time.sleep(random.uniform(0, WATCH_INTERVAL_MS / 1000))  # at a random point of the poll cycle
            store.alter(target, lambda _current, value=value: {"producer_byte_rate": str(int(value))})
            answered = time.perf_counter()
            with installed:
                if not installed.wait_for(lambda value=value: latest[key].get("producer_byte_rate") == value, 120):
                    raise SystemExit("the change never reached the gateway's quota state")
            latencies.append(time.perf_counter() - answered)
    finally:
        reloader.close()
        loop.call_soon_threadsafe(loop.stop)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker = KraftBroker(KAFKA_4_VERSION, Path(tmp) / "kraft")
        broker.start()
        try:
            start = time.perf_counter()
            fill(broker.bootstrap, args.entities)
            fill_s = time.perf_counter() - start
            store = open_admin_store(broker.bootstrap, None, timeout_ms=120_000)
            try:
                read_s, records = timed(lambda: store.describe(MATCH_ALL), 3)
                view = {r.entity: dict(r.configs) for r in records}
                install_s, _ = timed(
                    lambda: QuotaGate().load([(e.to_json(), q) for e, q in parsed_quotas(view).items()]), 3
                )
                latencies = change_latencies(store, args.changes)
            finally:
                store.close()
        finally:
            broker.stop()
    body = (
        "## `serve --bootstrap-server`: following a KRaft cluster's quotas by polling\n\n"
        f"Command: `python benchmarks/bench_cluster_poll.py --entities {args.entities} --changes {args.changes}` "
        f"on {machine()}, Kafka {KAFKA_4_VERSION} KRaft (one node), poll interval {WATCH_INTERVAL_MS} ms.\n\n"
        "| what | seconds |\n|---|---|\n"
        f"| write {len(records)} client quotas ({BATCH} per AlterClientQuotas) | {fill_s:.1f} |\n"
        f"| one full read (DescribeClientQuotas, no filter), median of 3 | {read_s:.2f} |\n"
        f"| one install of {len(records)} entities (parse + snapshot), median of 3 | {install_s:.2f} |\n"
        f"| alter answered -> enforced, {len(latencies)} changes: median / max | "
        f"{statistics.median(latencies):.2f} / {max(latencies):.2f} |\n"
    )
    print(body)
    write_section("bench_cluster_poll", body)


if __name__ == "__main__":
    main()
