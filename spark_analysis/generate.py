"""Synthetic but realistic quota dumps of any size, with their ground truth.

Model per entity (a user+client pair): a log-normal base demand, a daily sine, noise and rare
bursts. Each entity has a quota (some tight, some generous, some absent) and, like a broker,
the observed rate is capped near the quota while the client is throttled; the throttle is Kafka's
``(O - T) / T × W`` with W = 11 one-second samples (quota-enforcement.md §2.2), and a broker's
``throttle-time`` reads the Avg of the throttles of the last 60 s (``traffic_model``), so a poll
reads throttled for a minute after its client's last throttle.

Writes ``<out>/quotas.toml`` (the quotas in force, plus two idle ones), ``<out>/truth.json``
(per entity: quota, demand and observed percentiles, throttled fraction) and the dump files.
No Spark: numpy only, streamed in chunks, so memory stays flat for any size.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import numpy as np

from kconfigs.sanitize import sanitize
from kconfigs_analysis.kinds import KIND_QUOTA_KEY
from kconfigs_analysis.quotas import render_quota_toml
from kconfigs_analysis.traffic_model import QUOTA_WINDOW_MS, THROTTLE_AVG_MS

KINDS = ("fetch", "produce")  # JmxTool order: Fetch sorts before Produce
KIND_KEY = {kind: KIND_QUOTA_KEY[kind] for kind in KINDS}
WINDOW_MS = QUOTA_WINDOW_MS  # quota.window.num (11) × quota.window.size.seconds (1)
CHUNK_ROWS = 2_000


@dataclass(frozen=True)
class GeneratorSpec:
    samples: int
    out_dir: str
    fmt: str = "jmxtool"
    entities: int = 20
    brokers: int = 2
    interval_ms: int = 10_000
    start_ms: int = 1_714_557_600_000
    seed: int = 7


@dataclass(frozen=True)
class EntityModel:
    user: str
    client_id: str
    base: np.ndarray  # per kind, B/s
    quota: dict  # kind -> B/s or None


def _entities(spec: GeneratorSpec, rng: np.random.Generator) -> list[EntityModel]:
    models = []
    for i in range(spec.entities):
        user = f"CN=svc-{i:04d},OU=data" if i % 3 == 0 else f"user-{i:04d}"
        base = rng.lognormal(mean=13.0, sigma=1.0, size=len(KINDS))  # median ≈ 440 KB/s
        tightness = (0.7, 1.0, 3.0, None)[i % 4]  # quota = tightness × base peak; None = no quota
        quota = {
            k: (None if tightness is None else float(round(base[j] * 1.3 * tightness))) for j, k in enumerate(KINDS)
        }
        models.append(EntityModel(user, f"app-{i:04d}", base, quota))
    return models


def _demand(model: EntityModel, kind_index: int, times_ms: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    day = 2 * math.pi * (times_ms % 86_400_000) / 86_400_000
    seasonal = 1.0 + 0.3 * np.sin(day + kind_index)
    noise = rng.lognormal(0.0, 0.15, size=times_ms.shape)
    bursts = np.where(rng.random(times_ms.shape) < 0.02, 2.5, 1.0)
    return model.base[kind_index] * seasonal * noise * bursts


def _observe(window_demand: np.ndarray, quota: float | None) -> tuple[np.ndarray, np.ndarray]:
    """(observed rate, throttle ms) of each poll, from the demand's Rate over the quota window
    (``window_demand``, :func:`quota_window_rates`): a broker reads that Rate while it is at most the
    quota; over it the broker throttles and holds the rate near the quota (1 % above it, or the
    demand when that is less), and the throttle time is the delay that brings the demand down to
    the rate held, ``(D - O) / O × W`` (at least 0.1 ms: it was throttled), so that
    ``traffic_model.demand_rate`` reads the demand back from the sample."""
    if quota is None:
        return window_demand, np.zeros_like(window_demand)
    over = window_demand > quota
    held = np.where(over, np.minimum(window_demand, quota * 1.01), window_demand)
    throttle = np.where(over, np.maximum(np.round((window_demand - held) / held * WINDOW_MS, 1), 0.1), 0.0)
    return held, throttle


def quota_window_rates(demand: np.ndarray, before: np.ndarray, interval_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """The demand's rate over Kafka's quota window (11 s) ending at each poll, from the demand of
    each polled interval and of the intervals before them (``before``; the first interval's own
    demand stands for those before the dump). Returns (rates, ``before`` for the next polls).

    Worked example, 10-s polls: 11 s hold this interval's 10 s and the last second of the one
    before: demands 1.0 then 2.0 MB/s read (10 × 2.0 + 1 × 1.0) / 11 = 1.91 MB/s at the second poll.
    """
    overlap_ms = np.clip(WINDOW_MS - interval_ms * np.arange(math.ceil(WINDOW_MS / interval_ms)), 0, interval_ms)
    weights = overlap_ms / overlap_ms.sum()  # weights[k]: share of the window in the k-th interval back
    kept = len(weights) - 1
    pad = np.full(max(kept - len(before), 0), demand[0] if len(demand) else 0.0)
    history = np.concatenate([pad, before, demand])
    rates = np.convolve(history, weights, mode="valid")[-len(demand) :] if len(demand) else demand
    return rates, history[len(history) - kept :] if kept else history[:0]


def java_double(value: float) -> str:
    """Java ``Double.toString`` for the values we generate: E notation from 1e7 (``1.2E7``)."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(round(value, 1))
        return text if "." in text else text + ".0"
    exponent = math.floor(math.log10(abs(value)))
    mantissa = repr(round(value / 10**exponent, 6))
    return f"{mantissa}E{exponent}"


class _Truth:
    """Exact per-entity statistics, per broker then worst broker (as the report computes them)."""

    def __init__(self):
        self.observed: dict[tuple, list] = {}
        self.throttled: dict[tuple, list] = {}
        self.demand: dict[tuple, list] = {}

    def add(self, key: tuple, broker: int, observed: np.ndarray, throttle: np.ndarray, demand: np.ndarray) -> None:
        self.observed.setdefault((key, broker), []).append(observed)
        self.throttled.setdefault((key, broker), []).append(throttle > 0)
        self.demand.setdefault((key, broker), []).append(demand)

    def rows(self, quotas: dict) -> list[dict]:
        merged: dict[tuple, dict] = {}
        for (key, broker), parts in self.observed.items():
            values = np.sort(np.concatenate(parts))
            throttled = np.concatenate(self.throttled[(key, broker)])
            stats = {
                f"p{round(p * 100)}": float(values[max(math.ceil(p * len(values)) - 1, 0)]) for p in (0.5, 0.95, 0.99)
            }
            stats.update(max=float(values[-1]), samples=int(len(values)), throttled=int(throttled.sum()))
            demand = np.concatenate(self.demand[(key, broker)])
            row = merged.setdefault(
                key,
                {
                    "kind": key[0],
                    "user": key[1],
                    "client_id": key[2],
                    "quota": quotas[key],
                    "samples": 0,
                    "throttled": 0,
                },
            )
            for name in ("p50", "p95", "p99", "max"):
                row[name] = max(row.get(name, 0.0), stats[name])
            # demand: per sample on one broker (what the client asked of it); the mean is summed
            # over brokers (the entity's cluster-wide demand)
            row["demand_min"] = min(row.get("demand_min", math.inf), float(demand.min()))
            row["demand_max"] = max(row.get("demand_max", 0.0), float(demand.max()))
            row["demand_mean_total"] = row.get("demand_mean_total", 0.0) + float(demand.mean())
            row["samples"] += stats["samples"]
            row["throttled"] += stats["throttled"]
        for row in merged.values():
            row["throttled_fraction"] = row.pop("throttled") / row["samples"]
        return sorted(merged.values(), key=lambda r: (r["kind"], r["user"] or "", r["client_id"] or ""))


def _quota_records(models: list[EntityModel]) -> list:
    records = [
        ({"user": m.user, "client-id": m.client_id}, {KIND_KEY[k]: v for k, v in m.quota.items()})
        for m in models
        if m.quota["produce"] is not None
    ]
    records.append(({"user": "retired-team"}, {"producer_byte_rate": 5_242_880.0}))  # idle
    records.append(({"client-id": "old-batch"}, {"consumer_byte_rate": 1_048_576.0}))  # idle
    return records


def _series_tags(models: list[EntityModel], records: list) -> dict[tuple, tuple]:
    """(kind, user, client) -> (user tag decoded or None, client tag or None), as a broker names
    the sensor (``QuotaSnapshot.metric_tags``): the tag shape depends on the quota levels set."""
    from kconfigs_enforcement import QuotaSnapshot

    snapshot = QuotaSnapshot.from_records(records)
    tags = {}
    for m in models:
        for kind in KINDS:
            user_tag, client_tag = snapshot.metric_tags(m.user, m.client_id, KIND_KEY[kind])
            tags[(kind, m.user, m.client_id)] = (m.user if user_tag else None, client_tag or None)
    return tags


def _chunks(spec: GeneratorSpec, rows_total: int):
    for first in range(0, rows_total, CHUNK_ROWS):
        count = min(CHUNK_ROWS, rows_total - first)
        yield spec.start_ms + spec.interval_ms * np.arange(first, first + count, dtype=np.int64)


def throttle_time_readings(throttle: np.ndarray, before: np.ndarray, interval_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """A broker's ``throttle-time`` at each poll, given the throttle (ms, 0 = none) of each polled
    interval, and the throttles of the intervals before them (``before``): the Avg of the throttles
    recorded in the :data:`THROTTLE_AVG_MS` before the poll, 0 (the broker's NaN) when there were
    none. A client held at its quota through an interval is throttled once more by the first
    request of the next (the Rate's window is still full at the quota), so an interval's throttles
    reach the polls of the 60 s after that interval's end. Returns (readings, the throttles to
    pass as ``before`` for the next polls).

    Worked example, 10-s polls: one interval throttled 5,500 ms reads 5,500 at its own poll and
    the 6 after it (60 s), then 0; two throttled intervals 20 s apart (1,000 and 3,000 ms) read
    2,000 at the second one's poll.
    """
    lookback = math.ceil(THROTTLE_AVG_MS / interval_ms) + 1  # polls an interval's throttles reach
    kept = lookback - 1  # ``before`` holds at most this many
    history = np.concatenate([before, throttle])
    sums = np.concatenate([[0.0], np.cumsum(history)])
    counts = np.concatenate([[0], np.cumsum(history > 0)])
    end = np.arange(len(before), len(history)) + 1
    start = np.maximum(end - lookback, 0)
    count = counts[end] - counts[start]
    readings = np.where(count > 0, (sums[end] - sums[start]) / np.maximum(count, 1), 0.0)
    return np.round(readings, 1), history[len(history) - kept :] if kept else history[:0]


def _broker_series(spec, models, rng, times_ms, truth, tags, throttles_before):
    """Yield (broker, kind, model, tag key, observed, throttle) for one chunk of timestamps. A
    broker's ``throttle`` is its throttle-time reading (:func:`throttle_time_readings`); a usage
    log's is its window's own. ``throttles_before`` keeps each series' earlier throttles and demand."""
    per_window = spec.fmt == "usage-log"
    for broker in range(spec.brokers):
        for k, kind in enumerate(KINDS):
            for m in models:
                demand = _demand(m, k, times_ms, rng) / spec.brokers
                series = (broker, kind, m.client_id)
                window_demand, throttles_before[(series, "demand")] = quota_window_rates(
                    demand, throttles_before.get((series, "demand"), np.zeros(0)), spec.interval_ms
                )
                observed, throttle = _observe(window_demand, m.quota[kind])
                if not per_window:
                    before = throttles_before.get(series, np.zeros(0))
                    throttle, throttles_before[series] = throttle_time_readings(throttle, before, spec.interval_ms)
                key = (kind, *tags[(kind, m.user, m.client_id)])
                truth.add(key, broker, observed, throttle, demand)
                yield broker, kind, m, key, observed, throttle


def _jmx_column(kind: str, user: str | None, client: str | None, attribute: str) -> str:
    tags = ([f"user={sanitize(user)}"] if user else []) + ([f"client-id={client}"] if client else [])
    return f"kafka.server:type={kind.capitalize()},{','.join(tags)}:{attribute}"


def _write_jmxtool(spec, models, rng, truth, tags, rows_total) -> list[str]:
    paths = [os.path.join(spec.out_dir, f"broker-{b + 1}.jmx.csv") for b in range(spec.brokers)]
    handles = [open(p, "w", encoding="utf-8") for p in paths]
    throttles_before: dict = {}
    header_done = False
    for times_ms in _chunks(spec, rows_total):
        columns: list[dict] = [dict() for _ in range(spec.brokers)]
        for broker, kind, _m, key, observed, throttle in _broker_series(
            spec, models, rng, times_ms, truth, tags, throttles_before
        ):
            columns[broker][_jmx_column(kind, key[1], key[2], "byte-rate")] = observed
            columns[broker][_jmx_column(kind, key[1], key[2], "throttle-time")] = np.where(
                throttle > 0, throttle, np.nan
            )
        for broker, handle in enumerate(handles):
            names = sorted(columns[broker])  # JmxTool sorts keys (Java String order = code points)
            if not header_done:
                handle.write(",".join(f'"{n}"' for n in ["time"] + names) + "\n")
            cells = [[java_double(v) for v in columns[broker][n]] for n in names]
            for i, ts in enumerate(times_ms):
                handle.write(f"{ts}," + ",".join(col[i] for col in cells) + "\n")
        header_done = True
    for handle in handles:
        handle.close()
    return paths


def _write_prometheus(spec, models, rng, truth, tags, rows_total) -> list[str]:
    paths = [os.path.join(spec.out_dir, f"broker-{b + 1}.prom") for b in range(spec.brokers)]
    handles = [open(p, "w", encoding="utf-8") for p in paths]
    throttles_before: dict = {}
    for times_ms in _chunks(spec, rows_total):
        lines: list[list[tuple]] = [[] for _ in range(spec.brokers)]
        for broker, kind, _m, key, observed, throttle in _broker_series(
            spec, models, rng, times_ms, truth, tags, throttles_before
        ):
            labels = ",".join(
                f'{n}="{v}"' for n, v in (("client_id", key[2]), ("user", sanitize(key[1]) if key[1] else None)) if v
            )
            labels += f',instance="b{broker + 1}:7071"'
            lines[broker].append((kind, labels, observed, np.where(throttle > 0, throttle, np.nan)))
        for broker, handle in enumerate(handles):
            for i, ts in enumerate(times_ms):  # one scrape per timestamp, concatenated
                handle.write("# TYPE kafka_server_produce_byte_rate gauge\n")
                for kind, labels, observed, throttle in lines[broker]:
                    handle.write(f"kafka_server_{kind}_byte_rate{{{labels}}} {java_double(observed[i])} {ts}\n")
                    handle.write(f"kafka_server_{kind}_throttle_time{{{labels}}} {java_double(throttle[i])} {ts}\n")
    for handle in handles:
        handle.close()
    return paths


def _write_usage_log(spec, models, rng, truth, tags, rows_total) -> list[str]:
    """Gateway usage log: 1-s windows, raw identities (no broker split: brokers = 1)."""
    path = os.path.join(spec.out_dir, "gateway-usage.jsonl")
    throttles_before: dict = {}
    with open(path, "w", encoding="utf-8") as handle:
        for times_ms in _chunks(spec, rows_total):
            for _, kind, m, _, observed, throttle in _broker_series(
                spec, models, rng, times_ms, truth, tags, throttles_before
            ):
                quota = json.dumps(m.quota[kind])
                head = (
                    f'{{"window_ms":1000,"user":{json.dumps(m.user)},"client_id":"{m.client_id}","ip":null,'
                    f'"kind":"{kind}"'
                )
                for ts, nbytes, thr in zip(times_ms.tolist(), np.round(observed).tolist(), throttle.tolist()):
                    handle.write(
                        f'{{"ts_ms":{ts},{head[1:]},"value":{int(nbytes)},"throttle_ms":{thr},"quota":{quota}}}\n'
                    )
    return [path]


def _write_trace(spec, models, rng, truth, tags, rows_total) -> list[str]:
    """``kconfigs simulate --trace`` events: demand (not observed) bytes per interval."""
    path = os.path.join(spec.out_dir, "trace.csv")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("time_ms,user,client_id,ip,kind,value\n")
        for times_ms in _chunks(spec, rows_total):
            events = []
            for k, kind in enumerate(KINDS):
                for m in models:
                    nbytes = np.round(_demand(m, k, times_ms, rng) * spec.interval_ms / 1000).astype(np.int64)
                    events += [(t, m.user, m.client_id, kind, b) for t, b in zip(times_ms.tolist(), nbytes.tolist())]
            for t, user, client, kind, b in sorted(events, key=lambda e: e[0]):
                handle.write(
                    f'{t},"{user}",{client},,{kind},{b}\n' if "," in user else f"{t},{user},{client},,{kind},{b}\n"
                )
    return [path]


_WRITERS = {
    "jmxtool": _write_jmxtool,
    "prometheus": _write_prometheus,
    "usage-log": _write_usage_log,
    "trace": _write_trace,
}


def generate(spec: GeneratorSpec) -> dict:
    """Write the dump, quotas.toml and truth.json; return a summary (files, rows, samples)."""
    os.makedirs(spec.out_dir, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    models = _entities(spec, rng)
    records = _quota_records(models)
    brokers = 1 if spec.fmt in ("usage-log", "trace") else spec.brokers
    interval_ms = 1000 if spec.fmt == "usage-log" else spec.interval_ms  # one line per 1-s window
    spec = GeneratorSpec(**{**spec.__dict__, "brokers": brokers, "interval_ms": interval_ms})
    per_row = spec.entities * len(KINDS) * brokers
    rows_total = max(1, math.ceil(spec.samples / per_row))
    tags = (
        _series_tags(models, records)
        if spec.fmt in ("jmxtool", "prometheus")
        else {(k, m.user, m.client_id): (m.user, m.client_id) for m in models for k in KINDS}
    )
    truth = _Truth()
    files = _WRITERS[spec.fmt](spec, models, rng, truth, tags, rows_total)
    quotas = {(kind, *tags[(kind, m.user, m.client_id)]): m.quota[kind] for m in models for kind in KINDS}
    with open(os.path.join(spec.out_dir, "quotas.toml"), "w", encoding="utf-8") as handle:
        handle.write(render_quota_toml(records, ["quotas in force when the dump was generated"]))
    summary = {
        "format": spec.fmt,
        "files": files,
        "timestamps": rows_total,
        "samples": rows_total * per_row,
        "entities": spec.entities,
        "brokers": brokers,
        "idle_quotas": [["user", "retired-team"], ["client-id", "old-batch"]],
    }
    if spec.fmt != "trace":
        summary["entities_truth"] = truth.rows(quotas)
    with open(os.path.join(spec.out_dir, "truth.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1)
    return {k: v for k, v in summary.items() if k != "entities_truth"}
