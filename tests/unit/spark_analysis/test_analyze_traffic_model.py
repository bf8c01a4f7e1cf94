"""The what-if's traffic model against Kafka's own quota math (the real ``Enforcer``): a steady
client under its quota is never throttled, one over it is held to the quota, and a throttled
sample's throttle time gives its demand back."""

from __future__ import annotations

import pytest

from kconfigs_analysis.traffic_model import QUOTA_WINDOW_MS, SLOT_MS, SensorGroupReplay, demand_rate, recorded_share
from kconfigs_enforcement import Enforcer, QuotaSnapshot
from kconfigs_enforcement.replay import UsageEvent, decide

SAMPLE_MS = 10_000  # JmxTool --reporting-interval 10000


def _replay(kind: str, demand_per_s: float, quota_per_s: float, samples: int = 30):
    """One client asking ``demand_per_s`` bytes/s for ``samples`` 10-s samples, as the what-if
    charges it: one request per second of each sample's interval."""
    key = {"produce": "producer_byte_rate", "fetch": "consumer_byte_rate"}[kind]
    enforcer = Enforcer(QuotaSnapshot.from_records([({"user": "u", "client-id": "c"}, {key: quota_per_s})]))

    def send(key, now_ms, value):
        result = decide(enforcer, UsageEvent(now_ms, "u", "c", "", kind, value))
        return result.throttle_ms, result.accepted

    group = SensorGroupReplay(send, advance=lambda now_ms: None)
    slots = SAMPLE_MS // SLOT_MS
    for sample in range(samples):
        for k in range(1, slots + 1):
            now_ms = 1_000_000 + sample * SAMPLE_MS + k * SLOT_MS
            group.elastic(("u", "c"), kind, now_ms, round(demand_per_s * SLOT_MS / 1000), SLOT_MS, k == slots)
    return group.finish()[("u", "c")]


@pytest.mark.parametrize("kind", ["produce", "fetch"])
def test_a_steady_client_under_its_quota_is_never_throttled(kind):
    """1.4 MB/s against 1.6 MB/s: the lumped model (one 14 MB request per 10-s sample) throttled
    29 of 30 samples, two lumps inside one 11-s window doubling the measured rate."""
    totals = _replay(kind, 1_400_000, 1_600_000)
    assert (totals.samples, totals.throttled_samples, totals.throttled_events) == (30, 0, 0)
    assert totals.delivered == totals.demand


@pytest.mark.parametrize("kind", ["produce", "fetch"])
@pytest.mark.parametrize("over", [1.2, 2.0, 4.0])
def test_a_client_over_its_quota_is_held_to_the_quota(kind, over):
    quota = 1_000_000
    totals = _replay(kind, over * quota, quota, samples=60)
    rate = totals.delivered / (totals.span_ms / 1000)
    assert rate == pytest.approx(quota, rel=0.05)
    # every sample after the first (the fresh sensor's 10-s allowance) ends throttled
    assert totals.throttled_samples >= totals.samples - 1


def test_a_throttle_time_gives_the_demand_back():
    """Held at 1 MB/s with Kafka's delay X = (D - O) / O × W for D = 1.5 MB/s: 5,500 ms."""
    throttle_ms = (1_500_000 - 1_000_000) / 1_000_000 * QUOTA_WINDOW_MS
    assert throttle_ms == 5_500
    assert demand_rate(1_000_000, throttle_ms) == pytest.approx(1_500_000)
    assert demand_rate(1_000_000, 0.0) == demand_rate(1_000_000, None) == 1_000_000


def test_a_warm_up_before_the_first_sample_spends_a_fresh_sensors_allowance_uncounted():
    """A dump starts with the broker's sensor warm; a fresh one lets quota × 10 s through first
    (a 16-s capture's rate read 1.6 × the quota). The warm-up is replayed, not added up."""
    quota = 1_000_000
    enforcer = Enforcer(QuotaSnapshot.from_records([({"client-id": "c"}, {"producer_byte_rate": quota})]))

    def send(key, now_ms, value):
        result = decide(enforcer, UsageEvent(now_ms, "", "c", "", "produce", value))
        return result.throttle_ms, result.accepted

    group = SensorGroupReplay(send, advance=lambda now_ms: None)
    per_slot = 2 * quota * SLOT_MS // 1000
    for k in range(QUOTA_WINDOW_MS // SLOT_MS):  # the quota window before the first sample
        group.elastic(("c",), "produce", k * SLOT_MS, per_slot, SLOT_MS, False, counted=False)
    start_ms = QUOTA_WINDOW_MS
    for sample in range(6):
        for k in range(1, SAMPLE_MS // SLOT_MS + 1):
            now_ms = start_ms + sample * SAMPLE_MS + k * SLOT_MS
            group.elastic(("c",), "produce", now_ms, per_slot, SLOT_MS, k == SAMPLE_MS // SLOT_MS)
    totals = group.finish()[("c",)]
    assert (totals.samples, totals.throttled_samples, totals.span_ms) == (6, 6, 6 * SAMPLE_MS)
    assert totals.demand == 2 * quota * 6 * SAMPLE_MS / 1000
    assert totals.delivered / (totals.span_ms / 1000) == pytest.approx(quota, rel=0.05)


def _client_replay(kind: str, quota_per_s: float):
    key = {"produce": "producer_byte_rate", "fetch": "consumer_byte_rate"}[kind]
    enforcer = Enforcer(QuotaSnapshot.from_records([({"user": "u", "client-id": "c"}, {key: quota_per_s})]))

    def send(key, now_ms, value):
        result = decide(enforcer, UsageEvent(now_ms, "u", "c", "", kind, value))
        return result.throttle_ms, result.accepted

    return SensorGroupReplay(send, advance=lambda now_ms: None)


def _samples(group, kind: str, demands_per_s: list[float], start_ms: int = 1_000_000) -> None:
    slots = SAMPLE_MS // SLOT_MS
    for sample, demand in enumerate(demands_per_s):
        for k in range(1, slots + 1):
            now_ms = start_ms + sample * SAMPLE_MS + k * SLOT_MS
            group.elastic(("u", "c"), kind, now_ms, round(demand * SLOT_MS / 1000), SLOT_MS, k == slots)


def test_a_sample_reads_throttled_for_the_minute_after_the_last_throttle():
    """A broker's throttle-time is an Avg over 2 × 30 s: NaN (not throttled) only once no
    throttle was recorded in the 60 s before the poll. One 10-s burst over the quota, then
    traffic well under it: the burst's poll and the 6 after it read throttled (the last
    throttle falls in the burst's last second or the next interval's first), then none."""
    group = _client_replay("produce", 1_000_000)
    _samples(group, "produce", [500_000] * 3 + [3_000_000] + [500_000] * 12)
    totals = group.finish()[("u", "c")]
    assert (totals.samples, totals.throttled_samples) == (16, 7)


def test_a_steady_flow_at_its_quota_reads_its_own_rate():
    """A flow of 99.5 % of the quota for 60 samples is never throttled: each request is recorded
    at recorded_share of its bytes, so Kafka's Rate reads the flow's rate, not (E + s) / E of it."""
    for kind in ("produce", "fetch"):
        group = _client_replay(kind, 1_000_000)
        _samples(group, kind, [995_000] * 60)
        totals = group.finish()[("u", "c")]
        assert (totals.throttled_samples, totals.throttled_events, totals.delivered) == (0, 0, totals.demand)


def test_the_recorded_share_takes_out_the_request_kafkas_window_counts_in_excess():
    # one a second: 11 requests over a 10-s span -> 10/11 each; ten a second: 110 over 10.9 s
    assert recorded_share(1000) == pytest.approx(10 / 11)
    assert recorded_share(100) == pytest.approx(109 / 110)
    assert recorded_share(0) == 1.0


def test_a_quota_at_the_highest_demand_throttles_nothing_and_passes_it_whole():
    demands = [400_000, 900_000, 1_000_000, 700_000, 1_000_000, 1_000_000, 300_000] * 5
    group = _client_replay("produce", max(demands))
    _samples(group, "produce", demands)
    totals = group.finish()[("u", "c")]
    assert (totals.throttled_samples, totals.throttled_events) == (0, 0) and totals.delivered == totals.demand


def test_a_usage_log_line_is_throttled_for_a_throttle_in_its_own_window():
    group = _client_replay("produce", 1_000_000)
    slots = 1000 // SLOT_MS
    for line, demand in enumerate([5_000_000] * 12 + [100_000] * 3):
        for k in range(1, slots + 1):
            now_ms = 1_000_000 + line * 1000 + k * SLOT_MS
            group.elastic(
                ("u", "c"), "produce", now_ms, round(demand * SLOT_MS / 1000), SLOT_MS, k == slots, True, 1000
            )
    totals = group.finish()[("u", "c")]
    assert totals.samples == 15 and totals.throttled_samples <= 13  # the quiet lines after the burst are not
