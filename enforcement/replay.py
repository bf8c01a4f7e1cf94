"""Replay usage events through an :class:`Enforcer`: the what-if engine behind
``kconfigs simulate`` and the Spark per-entity replay (``spark_analysis/whatif.py``).

Event kinds and the meaning of ``value``:

- ``produce`` / ``fetch``: bytes (Produce request size / Fetch response size);
- ``request``: request-handler thread time in **nanoseconds** (KIP-124);
- ``connection``: one new connection from ``ip`` (``value`` ignored);
- ``producer_id``: the producer id used by ``user`` in a produce request.

Each event's own throttle is recorded as that quota type's ``throttle-time`` (one quota per
event, so it is the KIP-219 "winner"). Kafka's sensor expiry task runs every 30 s of event time.
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple

from kconfigs_enforcement.enforcer import EnforcementConfig, Enforcer
from kconfigs_enforcement.resolution import QuotaSnapshot

EVENT_KINDS = ("produce", "fetch", "request", "connection", "producer_id")
EXPIRE_INTERVAL_MS = 30_000  # Metrics' ExpireSensorTask period


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
        "produce": ("Produce", enforcer.record_produce),
        "fetch": ("Fetch", enforcer.record_fetch),
        "request": ("Request", enforcer.record_request_time),
    }
    if kind not in recorders:
        raise ValueError(f"Unknown event kind: {kind}")
    quota_type, record = recorders[kind]
    throttle_ms = record(event.user, event.client_id, event.value, now_ms)
    if throttle_ms > 0:
        enforcer.record_throttle(quota_type, event.user, event.client_id, throttle_ms, now_ms)
    return ReplayResult(event, throttle_ms, True)


def replay(
    events: Iterable[UsageEvent],
    snapshot: QuotaSnapshot,
    config: EnforcementConfig = EnforcementConfig(),
    enforcer: Enforcer | None = None,
) -> Iterator[ReplayResult]:
    """Yield one :class:`ReplayResult` per event, in order, from a fresh broker (or ``enforcer``)."""
    enforcer = enforcer or Enforcer(snapshot, config)
    next_expiry_ms = None
    for event in events:
        if next_expiry_ms is None:
            next_expiry_ms = event.time_ms + EXPIRE_INTERVAL_MS
        while event.time_ms >= next_expiry_ms:
            enforcer.expire_sensors(next_expiry_ms)
            next_expiry_ms += EXPIRE_INTERVAL_MS
        yield decide(enforcer, event)
