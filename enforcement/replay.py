"""Replay usage events through an :class:`Enforcer`: the what-if engine behind
``kconfigs simulate`` and the Spark per-entity replay (``spark_analysis/whatif.py``).

Event kinds and the meaning of ``value``:

- ``produce`` / ``fetch``: bytes (Produce request size / Fetch response size);
- ``request``: request-handler thread time in **nanoseconds** (KIP-124);
- ``connection``: one new connection from ``ip`` (``value`` ignored);
- ``producer_id``: the producer id used by ``user`` in a produce request.

Each event's own throttle is recorded as that quota type's ``throttle-time`` (one quota per
event, so it is the KIP-219 "winner"). Kafka's sensor expiry task runs every 30 s of event time.

:func:`replay` decides produce, fetch and request events in batches, each batch one call into the
native rate core (``rates.record_and_throttle_each``; on the pure-Python rate it decides event by
event): a batch never spans an expiry run, its sensors are resolved in event order first
(resolution reads the quotas, never the rates), and the managers it skips (connections, producer
ids) share no state with these sensors, so every result is the one :func:`decide` gives event by
event.
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple

from kconfigs.keys import QUOTA_KINDS
from kconfigs_enforcement.enforcer import DEFAULT_CONFIG, EnforcementConfig, Enforcer
from kconfigs_enforcement.rates import NATIVE, record_and_throttle_each
from kconfigs_enforcement.resolution import QuotaSnapshot
from kconfigs_enforcement.throttle import combined_throttle

EXPIRE_INTERVAL_MS = 30_000  # Metrics' ExpireSensorTask period
#: events per batch: enough to amortise the call into the rate core, few enough to stream results
BATCH_EVENTS = 4096
#: the kinds :func:`decide` knows; any other starts a batch of its own, so that the results before
#: it are yielded before its ValueError, as event by event
_KINDS = ("produce", "fetch", "request", "connection", "producer_id")


class UsageEvent(NamedTuple):
    time_ms: int
    user: str
    client_id: str
    ip: str
    kind: str
    value: int


class ReplayResult(NamedTuple):
    """``throttle_ms``: the quota delay (for a connection: until accepted or closed);
    ``accepted``: False for a dropped connection, True otherwise."""

    event: UsageEvent
    throttle_ms: int
    accepted: bool


def decide(enforcer: Enforcer, event: UsageEvent) -> ReplayResult:
    """Apply one event. :raises ValueError: for an unknown kind."""
    kind, now_ms = event.kind, event.time_ms
    if kind == "connection":
        decision = enforcer.connection_attempt(event.ip, now_ms)
        return ReplayResult(event, decision.delay_ms, decision.accept)
    if kind == "producer_id":
        return ReplayResult(event, enforcer.record_producer_ids(event.user, (event.value,), now_ms), True)
    recorders = {
        "produce": enforcer.record_produce,
        "fetch": enforcer.record_fetch,
        "request": enforcer.record_request_time,
    }
    if kind not in recorders:
        raise ValueError(f"Unknown event kind: {kind}")
    quota_type, record = QUOTA_KINDS[kind].metric_group, recorders[kind]
    throttle_ms = record(event.user, event.client_id, event.value, now_ms)
    if _recorded(kind, throttle_ms):
        enforcer.record_throttle(quota_type, event.user, event.client_id, throttle_ms, now_ms)
    return ReplayResult(event, throttle_ms, True)


def _recorded(kind: str, throttle_ms: int) -> bool:
    """KIP-219 for an event, which carries one quota: a bandwidth (produce / fetch) or the request
    quota; its throttle is recorded as the gateway records a request's (``combined_throttle``)."""
    if kind == "request":
        return combined_throttle(0, throttle_ms).recorded_by == "request"
    return combined_throttle(throttle_ms, 0).recorded_by == "bandwidth"


def replay(
    events: Iterable[UsageEvent],
    snapshot: QuotaSnapshot,
    config: EnforcementConfig = DEFAULT_CONFIG,
    enforcer: Enforcer | None = None,
) -> Iterator[ReplayResult]:
    """Yield one :class:`ReplayResult` per event, in order, from a fresh broker (or ``enforcer``).

    :raises ValueError: for an unknown kind, once the results of the events before it are yielded
    """
    enforcer = enforcer or Enforcer(snapshot, config)
    # the pure-Python rate gains nothing from one call per batch, and building the batch's lists
    # costs it about a sixth (benchmarks/RESULTS.md, rate-calls): it decides event by event
    decide_all = decide_batch if NATIVE else _decide_each
    next_expiry_ms = None
    batch: list[UsageEvent] = []
    for event in events:
        if next_expiry_ms is None:
            next_expiry_ms = event.time_ms + EXPIRE_INTERVAL_MS
        if event.time_ms >= next_expiry_ms or len(batch) == BATCH_EVENTS or event.kind not in _KINDS:
            yield from decide_all(enforcer, batch)
            batch = []
        while event.time_ms >= next_expiry_ms:
            enforcer.expire_sensors(next_expiry_ms)
            next_expiry_ms += EXPIRE_INTERVAL_MS
        batch.append(event)
    yield from decide_all(enforcer, batch)


def _decide_each(enforcer: Enforcer, events: list[UsageEvent]) -> list[ReplayResult]:
    return [decide(enforcer, event) for event in events]


def decide_batch(enforcer: Enforcer, events: list[UsageEvent]) -> list[ReplayResult]:
    """:func:`decide` for each event, in order, with no expiry run in between; the produce, fetch
    and request decisions in one call into the rate core.

    :raises ValueError: for an unknown kind
    """
    managers = {"produce": enforcer.produce, "fetch": enforcer.fetch, "request": enforcer.request}
    results: list = [None] * len(events)
    positions, batched, sensors, values, times_ms, unrecord = [], [], [], [], [], []
    for i, event in enumerate(events):
        time_ms, user, client_id, _ip, kind, value = event
        manager = managers.get(kind)
        if manager is None:  # connection / producer_id: managers of their own, decided here
            results[i] = decide(enforcer, event)
            continue
        positions.append(i)
        batched.append(manager)
        sensors.append(manager.recording_sensor(user, client_id, time_ms))
        values.append(manager.recorded_value(value))
        times_ms.append(time_ms)
        unrecord.append(manager.unrecords_throttled)
    throttles = record_and_throttle_each(sensors, values, times_ms, unrecord)
    for i, manager, throttle_ms in zip(positions, batched, throttles):
        event = events[i]
        if _recorded(event.kind, throttle_ms):
            manager.record_throttle(event.user, event.client_id, throttle_ms, event.time_ms)
        # tuple.__new__ directly: a NamedTuple's generated __new__ is one more Python call per event
        results[i] = tuple.__new__(ReplayResult, (event, throttle_ms, True))
    return results
