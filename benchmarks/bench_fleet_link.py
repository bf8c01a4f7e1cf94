"""What a fleet costs one gateway instance: the coordination link's work per period, the bytes it
sends, and a charge's cost with the fleet's share applied against one without (the peer, same run).

The link (enforcement/gateway/fleet_link.py) runs beside the data plane on its own thread, every
period: measure each live sensor, allocate the shares, set the bounds, encode the report; and per
report of another instance: decode it and file it. A charge is unchanged by the fleet (the share
is the sensor's bound, a field every charge reads anyway), which the charge peer checks. The
Kafka client's own cost (one produce and one poll per period) is not in these figures.

Run: python benchmarks/bench_fleet_link.py [--entities 10000 --periods 40]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import machine, write_section  # noqa: E402

from kconfigs_enforcement import EnforcementConfig, Enforcer, QuotaSnapshot  # noqa: E402
from kconfigs_enforcement.fleet_share import (  # noqa: E402
    BYTES_PER_ENTITY,
    DEFAULT_PERIOD_MS,
    decode_report,
    encode_report,
    entity_digest,
)
from kconfigs_enforcement.gateway.fleet_link import FleetLink  # noqa: E402

QUOTA = 1_000_000


def enforcer_with_entities(entities: int, now_ms: int) -> Enforcer:
    enforcer = Enforcer(
        QuotaSnapshot.from_records([({"client-id": None}, {"producer_byte_rate": QUOTA})]), EnforcementConfig()
    )
    for i in range(entities):
        enforcer.record_produce("", f"client-{i}", 10_000, now_ms)
    return enforcer


def period_cost_ms(entities: int, periods: int) -> float:
    """The link's work per period for ``entities`` active entities (no Kafka client: the loop's
    allocate-and-report step alone), in ms, the median of ``periods``."""
    now = [1_000_000]
    enforcer = enforcer_with_entities(entities, now[0])
    link = FleetLink("bench", "127.0.0.1:1", lambda: [enforcer.produce], threading.RLock(), clock_ms=lambda: now[0])
    others = {entity_digest(f"Produce-:client-{i}"): 50_000.0 for i in range(entities)}
    link.view.board.receive("other", others, now[0])
    costs = []
    for _ in range(periods):
        now[0] += DEFAULT_PERIOD_MS
        link.view.board.receive("other", others, now[0])
        started = time.perf_counter()
        link._allocate_and_report()
        encode_report(link.view.smoothed)
        costs.append((time.perf_counter() - started) * 1000)
    costs.sort()
    return costs[len(costs) // 2]


def receive_cost_ms(entities: int, repeats: int = 20) -> float:
    """Decoding and filing one other instance's report of ``entities`` entities, in ms."""
    from kconfigs_enforcement.fleet_share import ReportBoard

    report = encode_report({entity_digest(f"Produce-:client-{i}"): 50_000.0 for i in range(entities)})
    board = ReportBoard()
    started = time.perf_counter()
    for i in range(repeats):
        demands, _leaving = decode_report(report)
        board.receive("other", demands, i)
    return (time.perf_counter() - started) * 1000 / repeats


def charge_ns(shared: bool, charges: int = 200_000) -> float:
    """One produce charge on a native sensor, with a fleet share set on it or not, in ns."""
    enforcer = enforcer_with_entities(1, 0)
    sensor = enforcer.produce.sensor_for("", "client-0", 0)
    if shared:
        enforcer.produce.set_fleet_share(sensor, 1 / 3)
    record = enforcer.record_produce
    started = time.perf_counter()
    for i in range(charges):
        record("", "client-0", 1, i // 100)
    return (time.perf_counter() - started) * 1e9 / charges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--periods", type=int, default=40)
    args = parser.parse_args()
    small = max(1, args.entities // 10)
    period_s = DEFAULT_PERIOD_MS / 1000
    rows = []
    for entities in (small, args.entities):
        cost = period_cost_ms(entities, args.periods)
        rows.append((entities, cost, receive_cost_ms(entities), (6 + BYTES_PER_ENTITY * entities) / period_s))
    off = min(charge_ns(False) for _ in range(3))
    on = min(charge_ns(True) for _ in range(3))
    lines = [
        "## What a fleet costs one gateway instance (the coordination link, a charge with a share)",
        "",
        f"Command: `python benchmarks/bench_fleet_link.py --entities {args.entities} --periods {args.periods}`",
        f"on {machine()}; period {DEFAULT_PERIOD_MS} ms. The link's step per period (measure each live",
        "sensor, allocate, set the bounds, encode the report) and per received report (decode, file),",
        "without the Kafka client's produce and poll; a charge on a native sensor with a fleet share",
        "against one without, in the same run.",
        "",
        "| active entities | link step per period | share of a core | receiving one report | report bytes/s |",
        "|---|---|---|---|---|",
    ]
    for entities, cost, receive, bps in rows:
        lines.append(
            f"| {entities:,} | {cost:.2f} ms | {cost / DEFAULT_PERIOD_MS * 100:.1f} % | {receive:.2f} ms "
            f"| {bps / 1000:.1f} kB/s ({BYTES_PER_ENTITY / period_s:.0f} B/s per entity) |"
        )
    lines += [
        "",
        "| a produce charge (Python call into the native sensor) | ns |",
        "|---|---|",
        f"| no fleet (peer) | {off:.0f} |",
        f"| with a fleet share on the sensor | {on:.0f} ({(on / off - 1) * 100:+.1f} %) |",
        "",
        "Target (issue): the gateway's CPU per request within 10 % of its cost without a fleet. A",
        "charge is the same work with a share (the share is the bound it reads anyway); the fleet's",
        "cost is the link's thread, a share of a core that grows with the active entities and the",
        "fleet size (each other instance's report is received every period), not with the requests.",
    ]
    write_section("fleet-link", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
