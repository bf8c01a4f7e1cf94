"""Rate decisions from Python: decisions/s for the native rate (enforcement/native) and the
pure-Python one, single calls and batches, where a native decision's time goes, and a what-if
replay of a generated dump. Writes the <!-- rate-calls --> section of RESULTS.md.

A decision = one record plus its throttle (``SampledRate.record`` + ``throttle_time_ms``, or
``RateSensor.record_and_throttle``, or one element of ``record_and_throttle_each``). Both
implementations are importable in one process, so every pass runs each path in turn (alternating,
best pass kept): on a shared machine the peers see the same load.

    python benchmarks/bench_rate_calls.py [--decisions 200000] [--rates 10000] [--replay-samples 10000000]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._results import machine, write_section  # noqa: E402
from kconfigs_enforcement import _native, throttle_time_ms  # noqa: E402
from kconfigs_enforcement.native_rates import NativeRateSensor, NativeSampledRate  # noqa: E402
from kconfigs_enforcement.native_rates import record_and_throttle_each as native_each  # noqa: E402
from kconfigs_enforcement.replay import BATCH_EVENTS, EXPIRE_INTERVAL_MS, decide, replay  # noqa: E402
from kconfigs_enforcement.sensors import PureRateSensor, pure_record_and_throttle_each  # noqa: E402
from kconfigs_enforcement.stats import PureSampledRate  # noqa: E402

T0 = 1_700_000_000_000
QUOTA = 1_000_000.0  # B/s: the clock moves 1 ms per 1000 decisions, so some entities go over


def make_events(count: int, rates: int, seed: int = 1) -> list[tuple[int, int, int]]:
    """(rate index, bytes, now_ms): random rates, 100-16 383 B, 1000 decisions per simulated ms."""
    rng = random.Random(seed)
    return [(rng.randrange(rates), rng.randrange(100, 16_384), T0 + i // 1000) for i in range(count)]


def loop_record_then_throttle(rates: list, events: list) -> float:
    start = time.process_time()
    for index, value, now_ms in events:
        rate = rates[index]
        rate.record(value, now_ms)
        throttle_time_ms(rate, QUOTA, now_ms)
    return time.process_time() - start


def loop_record_and_throttle(sensors: list, events: list) -> float:
    start = time.process_time()
    for index, value, now_ms in events:
        sensors[index].record_and_throttle(value, now_ms)
    return time.process_time() - start


def loop_alone(sensors: list, events: list) -> float:
    """The same loop, unpacking and indexing, with no call: what any decision costs on top."""
    start = time.process_time()
    for index, _value, _now_ms in events:
        sensors[index]
    return time.process_time() - start


def batches_of(sensors: list, events: list) -> list[tuple[list, list, list]]:
    """The replay's batches (BATCH_EVENTS decisions each), built before the clock starts, as the
    loops above get their events pre-built."""
    out = []
    for start in range(0, len(events), BATCH_EVENTS):
        chunk = events[start : start + BATCH_EVENTS]
        out.append(([sensors[i] for i, _, _ in chunk], [v for _, v, _ in chunk], [t for _, _, t in chunk]))
    return out


def loop_batched(each, batches: list) -> float:
    start = time.process_time()
    for sensors, values, times_ms in batches:
        each(sensors, values, times_ms)
    return time.process_time() - start


PATHS = {
    # name: (make a fresh rate, run the decisions over the rates and events)
    "record_then_throttle_native": (lambda: NativeSampledRate(), loop_record_then_throttle),
    "record_then_throttle_pure": (lambda: PureSampledRate(), loop_record_then_throttle),
    "record_and_throttle_native": (lambda: NativeRateSensor(11, 1000, False, bound=QUOTA), loop_record_and_throttle),
    "record_and_throttle_pure": (lambda: PureRateSensor(11, 1000, False, bound=QUOTA), loop_record_and_throttle),
    "batched_native": (
        lambda: NativeRateSensor(11, 1000, False, bound=QUOTA),
        lambda sensors, events: loop_batched(native_each, batches_of(sensors, events)),
    ),
    "batched_pure": (
        lambda: PureRateSensor(11, 1000, False, bound=QUOTA),
        lambda sensors, events: loop_batched(pure_record_and_throttle_each, batches_of(sensors, events)),
    ),
    "loop_alone": (lambda: None, loop_alone),
}


def measure_decisions(count: int, rates: int, passes: int) -> dict[str, float]:
    """Seconds per decision, best of ``passes`` alternating passes, fresh rates each pass."""
    events = make_events(count, rates)
    best = {name: float("inf") for name in PATHS}
    gc.collect()
    gc.freeze()  # the pre-built events are scaffolding: keep them out of the cyclic GC's scans
    for _ in range(passes):
        for name, (new_rate, run) in PATHS.items():
            fresh = [new_rate() for _ in range(rates)]
            run(fresh, events[: count // 10])  # warm: every rate has its samples, as in steady state
            best[name] = min(best[name], run(fresh, events) / count)
    gc.unfreeze()
    return best


def measure_native_split(count: int, rates: int, passes: int) -> dict[str, float]:
    """Seconds per decision of the native core alone, in Rust: the arithmetic, and with the lock."""
    unlocked = min(_native._time_decisions_ns(count, rates, False) for _ in range(passes))
    locked = min(_native._time_decisions_ns(count, rates, True) for _ in range(passes))
    return {"arithmetic": unlocked / 1e9, "arithmetic_and_lock": locked / 1e9}


# -- what-if replay ------------------------------------------------------------------------------


def generate_dump(samples: int, out_dir: str) -> tuple[str, str]:
    """A generated usage trace of ``samples`` events (``kconfigs analyze``'s generator) and the
    quotas in force when it was generated: (trace path, quotas path)."""
    from kconfigs_analysis.generate import GeneratorSpec, generate

    generate(GeneratorSpec(samples=samples, out_dir=out_dir, fmt="trace"))
    return os.path.join(out_dir, "trace.csv"), os.path.join(out_dir, "quotas.toml")


def load_trace(path: str) -> list:
    """The trace through ``kconfigs simulate``'s reader, a chunk of lines at a time, its names
    interned (one string per entity, as a long-running reader would keep them)."""
    from kconfigs_enforcement.commands.simulate import HEADER, parse_trace

    events, chunk = [], [",".join(HEADER) + "\n"]
    with open(path, encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            chunk.append(line)
            if len(chunk) > 200_000:
                events += interned(parse_trace("".join(chunk), path))
                chunk = chunk[:1]
    return events + interned(parse_trace("".join(chunk), path))


def interned(events: list) -> list:
    intern = sys.intern
    return [e._replace(user=intern(e.user), client_id=intern(e.client_id), ip=intern(e.ip)) for e in events]


def replay_event_by_event(events: list, enforcer) -> list:
    """``decide`` per event on the replay's expiry schedule: the replay before batching."""
    results, next_expiry_ms = [], None
    for event in events:
        if next_expiry_ms is None:
            next_expiry_ms = event.time_ms + EXPIRE_INTERVAL_MS
        while event.time_ms >= next_expiry_ms:
            enforcer.expire_sensors(next_expiry_ms)
            next_expiry_ms += EXPIRE_INTERVAL_MS
        results.append(decide(enforcer, event))
    return results


def replay_figures(trace: str, quotas: str) -> dict:
    """In this process's implementation: seconds for the batched replay and for the event-by-event
    one, and a digest of their results (which must agree)."""
    from kconfigs_enforcement import Enforcer, QuotaSnapshot, rates
    from kconfigs_enforcement.commands.resolve import load_quota_file

    snapshot = QuotaSnapshot.from_records(load_quota_file(quotas))
    events = load_trace(trace)
    gc.collect()
    gc.freeze()
    figures = {"native": rates.NATIVE, "events": len(events)}
    for name, run in (
        ("batched", lambda: list(replay(events, snapshot))),
        ("event_by_event", lambda: replay_event_by_event(events, Enforcer(snapshot))),
    ):
        start = time.process_time()
        results = run()
        figures[f"{name}_s"] = time.process_time() - start
        figures[f"{name}_digest"] = digest(results)
        del results
    gc.unfreeze()
    return figures


def digest(results: list) -> list:
    """Events, throttled events, throttle ms in all, and the last result: enough to tell runs apart."""
    throttled = [r.throttle_ms for r in results if r.throttle_ms > 0]
    return [len(results), len(throttled), sum(throttled), list(results[-1][1:]) if results else None]


def replay_in_child(trace: str, quotas: str, pure: bool) -> dict:
    """A fresh process: the implementation is chosen at import, and each child frees its events."""
    env = {**os.environ, "KCONFIGS_PURE_PYTHON": "1" if pure else "0"}
    cmd = [sys.executable, __file__, "--emit-replay-json", trace, quotas]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def rate_row(label: str, per_decision_s: float, native_s: float) -> str:
    return f"| {label} | {1 / per_decision_s:,.0f} | {per_decision_s * 1e9:,.0f} | {native_s / per_decision_s:.2f} |"


def render(args, best: dict, split: dict, replays: list[dict], loads: tuple[float, float]) -> str:
    native_single = best["record_and_throttle_native"]
    loop = best["loop_alone"]
    arithmetic, with_lock = split["arithmetic"], split["arithmetic_and_lock"]
    call = native_single - loop - with_lock
    batched = best["batched_native"]
    native_replays = [r for r in replays if r["native"]]
    pure_replay = next(r for r in replays if not r["native"])
    fastest = min(native_replays, key=lambda r: r["batched_s"])
    best_by_event = min(native_replays, key=lambda r: r["event_by_event_s"])
    events = fastest["events"]
    replay_rows = "\n".join(
        f"| {label} | {events / seconds:,.0f} | {seconds:.1f} |"
        for label, seconds in (
            ("native, `replay.replay` (batches of one call into Rust each)", fastest["batched_s"]),
            ("native, `decide` per event (the replay before batches)", best_by_event["event_by_event_s"]),
            ("pure Python, `replay.replay` (event by event on this rate)", pure_replay["batched_s"]),
            ("pure Python, `decide` per event", pure_replay["event_by_event_s"]),
        )
    )
    target = 1_500_000
    return f"""## Rate decisions from Python (native and pure-Python rate, single calls and batches)

Command: `python benchmarks/bench_rate_calls.py --decisions {args.decisions} --rates {args.rates} --replay-samples {args.replay_samples}`
on {machine()}, Python {platform.python_version()}. The 2-core machine was shared with other jobs
(load average {loads[0]:.1f} before / {loads[1]:.1f} after): every figure is per second of this
process's CPU time, best of {args.passes} passes in which the paths take turns, each on fresh rates
warmed with a tenth of the decisions. {args.decisions:,} decisions over {args.rates:,} rates, values
100-16 383 B, 1000 decisions per simulated ms, quota {QUOTA:,.0f} B/s.

| path | decisions/s | ns per decision | relative to the native single call |
|---|---|---|---|
{rate_row("`SampledRate.record` + `throttle_time_ms`, native", best["record_then_throttle_native"], native_single)}
{rate_row("`SampledRate.record` + `throttle_time_ms`, pure Python", best["record_then_throttle_pure"], native_single)}
{rate_row("`RateSensor.record_and_throttle`, native", native_single, native_single)}
{rate_row("`RateSensor.record_and_throttle`, pure Python", best["record_and_throttle_pure"], native_single)}
{rate_row(f"`rates.record_and_throttle_each`, native, {BATCH_EVENTS} decisions per call", batched, native_single)}
{rate_row(f"`rates.record_and_throttle_each`, pure Python, {BATCH_EVENTS} per call", best["batched_pure"], native_single)}

Target ≥ {target:,} decisions/s from Python with the native class: **{"met" if 1 / native_single >= target else "NOT met"}** by
single calls ({1 / native_single / 1e6:.2f} M/s), **{"met" if 1 / batched >= target else "NOT met"}** by batches
({1 / batched / 1e6:.2f} M/s).

Where a native single decision's {native_single * 1e9:.0f} ns go (each part measured on its own, same run):

| part | ns | share | measured as |
|---|---|---|---|
| the Python loop around it | {loop * 1e9:.0f} | {loop / native_single:.0%} | the same loop, unpacking and indexing, with no call |
| the call (CPython to PyO3: method lookup, argument conversion, the result's int) | {call * 1e9:.0f} | {call / native_single:.0%} | the single call's time less the other three parts |
| the lock (the sensor's mutex, shared with the data plane's threads) | {(with_lock - arithmetic) * 1e9:.0f} | {(with_lock - arithmetic) / native_single:.0%} | the same decisions in Rust alone, with the lock less without |
| the arithmetic (record, purge, window, throttle) | {arithmetic * 1e9:.0f} | {arithmetic / native_single:.0%} | the same decisions in Rust alone, no lock (`_native._time_decisions_ns`) |

A batch pays the call once per {BATCH_EVENTS} decisions: {batched * 1e9:.0f} ns per decision, of which
{with_lock * 1e9:.0f} ns are the lock and the arithmetic, the rest reading each element from the lists.
Every decision still takes its sensor's lock once, as a single call does, so the data plane's threads
recording into the same sensors interleave between decisions, never inside one.

### What-if replay of a generated dump

`kconfigs analyze`'s generator writes a {args.replay_samples:,}-sample usage trace (the `kconfigs simulate`
format: {events:,} produce and fetch events of 20 entities, with the quotas in force); it is read with
`kconfigs simulate`'s reader and replayed against those quotas, in a fresh process per
implementation (native, pure Python, native again: best native kept), both ways in each. The
replay and `decide` per event gave the same results in every process (events, throttled
events, throttle ms in all: {fastest["batched_digest"][:3]}). On the pure-Python rate the replay
decides event by event: batches made it slower there (154,395 against 183,989 events/s in the
previous run of this benchmark), as building the batch's lists costs more than the calls it saves.

| replay | events/s | s |
|---|---|---|
{replay_rows}
"""


def run_replays(args) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-rate-calls-") as out_dir:
        trace, quotas = generate_dump(args.replay_samples, out_dir)
        replays = [replay_in_child(trace, quotas, pure) for pure in (False, True, False)]
    digests = {json.dumps(r[key]) for r in replays for key in ("batched_digest", "event_by_event_digest")}
    if len(digests) != 1:
        sys.exit(f"the replays disagree: {sorted(digests)}")
    if [r["native"] for r in replays] != [True, False, True]:
        sys.exit("the child processes did not run the implementations asked for")
    return replays


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--decisions", type=int, default=200_000)
    parser.add_argument("--rates", type=int, default=10_000)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--replay-samples", type=int, default=10_000_000)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--emit-replay-json", nargs=2, metavar=("TRACE", "QUOTAS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.emit_replay_json:
        print(json.dumps(replay_figures(*args.emit_replay_json)))
        return
    load_before = os.getloadavg()[0]
    best = measure_decisions(args.decisions, args.rates, args.passes)
    split = measure_native_split(args.decisions, args.rates, args.passes)
    replays = run_replays(args)
    body = render(args, best, split, replays, (load_before, os.getloadavg()[0]))
    print(body)
    if not args.no_write:
        write_section("rate-calls", body)


if __name__ == "__main__":
    main()
