"""The replay decides its produce, fetch and request events in batches (one call into the rate
core per batch): every result, and every metric left behind, is what deciding event by event
gives (``decide`` on Kafka's ExpireSensorTask schedule, the replay as it was)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconfigs_enforcement import EnforcementConfig, Enforcer, QuotaSnapshot
from kconfigs_enforcement.enforcer import DEFAULT_CONFIG
from kconfigs_enforcement.replay import BATCH_EVENTS, EXPIRE_INTERVAL_MS, UsageEvent, decide, replay

T0 = 1_700_000_000_000
QUOTAS = [
    ({"user": None}, {"producer_byte_rate": 40_000, "consumer_byte_rate": 60_000, "request_percentage": 20}),
    ({"user": "alice"}, {"producer_byte_rate": 5_000, "producer_ids_rate": 0.5}),
    ({"user": "bob", "client-id": "etl"}, {"consumer_byte_rate": 8_000}),
    ({"client-id": "free"}, {"producer_byte_rate": 10**9}),
    ({"ip": None}, {"connection_creation_rate": 1}),
]
VALUE_BELOW = {"request": 1_000_000_000}  # ns of thread time; bytes otherwise
KINDS = ["produce"] * 4 + ["fetch"] * 3 + ["request"] * 2 + ["connection", "producer_id"]


def event_by_event(events, snapshot, config):
    """The reference: ``decide`` per event, sensors expired every 30 s of event time from the first."""
    enforcer = Enforcer(snapshot, config)
    results, next_expiry_ms = [], None
    for event in events:
        if next_expiry_ms is None:
            next_expiry_ms = event.time_ms + EXPIRE_INTERVAL_MS
        while event.time_ms >= next_expiry_ms:
            enforcer.expire_sensors(next_expiry_ms)
            next_expiry_ms += EXPIRE_INTERVAL_MS
        results.append(decide(enforcer, event))
    return results, enforcer


def random_trace(rng: random.Random, count: int) -> list[UsageEvent]:
    """Bursts of traffic, with idle gaps past the one-hour sensor expiry now and then."""
    now, events = T0, []
    for _ in range(count):
        now += rng.choice([0, 0, 1, 3, 40, 200]) if rng.random() > 0.0005 else 3_700_000
        kind = rng.choice(KINDS)
        value = rng.randrange(1, 2**40) if kind == "producer_id" else rng.randrange(0, VALUE_BELOW.get(kind, 20_000))
        user, client = rng.choice(["alice", "bob", "carol"]), rng.choice(["etl", "free", "web"])
        events.append(UsageEvent(now, user, client, f"10.0.0.{rng.randrange(2)}", kind, value))
    return events


def assert_same_as_event_by_event(events, snapshot, config=DEFAULT_CONFIG):
    expected, reference = event_by_event(events, snapshot, config)
    enforcer = Enforcer(snapshot, config)
    assert list(replay(events, snapshot, config, enforcer)) == expected
    end_ms = events[-1].time_ms if events else T0
    assert list(enforcer.metrics(end_ms)) == list(reference.metrics(end_ms))
    return expected


def test_a_long_mixed_trace_gives_the_results_and_metrics_of_deciding_event_by_event():
    events = random_trace(random.Random(7), 3 * BATCH_EVENTS + 123)
    expected = assert_same_as_event_by_event(events, QuotaSnapshot.from_records(QUOTAS))
    kinds_throttled = {r.event.kind for r in expected if r.throttle_ms > 0}
    assert kinds_throttled == {"produce", "fetch", "request", "connection", "producer_id"}
    assert any(not r.accepted for r in expected)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 400), st.booleans())
def test_short_traces_give_the_results_of_deciding_event_by_event(seed, count, legacy):
    events = random_trace(random.Random(seed), count)
    assert_same_as_event_by_event(events, QuotaSnapshot.from_records(QUOTAS), EnforcementConfig(legacy_pre_3_8=legacy))


def test_an_unknown_kind_fails_after_the_results_before_it():
    events = [UsageEvent(T0, "alice", "etl", "", "produce", 90_000), UsageEvent(T0 + 1, "alice", "etl", "", "burst", 1)]
    results = replay(events, QuotaSnapshot.from_records(QUOTAS))
    # a fresh sensor's window is padded to (11 - 1) * 1 s: O = 90 000 B / 10 s = 9000 B/s,
    # T = 5000 B/s, X = (9000 - 5000) / 5000 * 10 000 ms = 8000 ms
    assert next(results).throttle_ms == 8000
    with pytest.raises(ValueError, match="Unknown event kind: burst"):
        next(results)
