"""Golden vectors from Kafka's own unit tests, each with its formula worked through.

Kafka's MockTime starts at the wall clock, so these start at an epoch-like T0 (it matters for the
token bucket, which starts full only because lastUpdateMs starts at 0)."""

from __future__ import annotations

import math

import pytest

from kconfigs_enforcement import EnforcementConfig, Enforcer, QuotaSnapshot, SampledRate, java_round, throttle_time_ms
from kconfigs_enforcement.quota_manager import NANOS_TO_PERCENT_PER_SEC

T0 = 1_700_000_000_000


def snapshot(*records):
    return QuotaSnapshot.from_records(records)


def test_quota_violation_throttles_2100_ms():
    # ClientQuotaManagerTest.testQuotaViolation: quota 500 B/s, N=11, W=1 s.
    # 10 x 400 B at 1 s intervals, then 2300 B at +10.5 s:
    # O = (4000 + 2300) / 10.5 s = 600 B/s; X = (600 - 500) / 500 * 10 500 ms = 2100 ms.
    enforcer = Enforcer(snapshot(({"client-id": "unknown"}, {"producer_byte_rate": 500})))
    for i in range(10):
        assert enforcer.record_produce("ANONYMOUS", "unknown", 400, T0 + i * 1000) == 0
    assert enforcer.record_produce("ANONYMOUS", "unknown", 2300, T0 + 10_500) == 2100


def test_bursty_sample_rolls_over_after_ten_more_windows():
    # Same test, continued: after sleeping the 2100 ms throttle and 10 more 400 B records 1 s
    # apart, record(0) is no longer throttled ("bursty sample rolled over").
    enforcer = Enforcer(snapshot(({"client-id": "unknown"}, {"producer_byte_rate": 500})))
    for i in range(10):
        enforcer.record_produce("ANONYMOUS", "unknown", 400, T0 + i * 1000)
    now = T0 + 10_500
    enforcer.record_produce("ANONYMOUS", "unknown", 2300, now)
    now += 2100
    for _ in range(10):
        enforcer.record_produce("ANONYMOUS", "unknown", 400, now)
        now += 1000
    assert enforcer.record_produce("ANONYMOUS", "unknown", 0, now) == 0


def test_single_large_produce_on_fresh_sensor_throttles_10000_ms():
    # Fresh sensor, quota 1000 B/s: one 20 000 B produce is measured over (N-1)*W = 10 s:
    # O = 20 000 / 10 s = 2000 B/s; X = (2000 - 1000) / 1000 * 10 000 ms = 10 000 ms (no cap).
    enforcer = Enforcer(snapshot(({"user": "alice"}, {"producer_byte_rate": 1000})))
    assert enforcer.record_produce("alice", "app", 20_000, T0) == 10_000


def millis_to_percent(millis: float) -> float:
    # ClientRequestQuotaManagerTest.millisToPercent, same double arithmetic
    return millis * 1000 * 1000 * NANOS_TO_PERCENT_PER_SEC


def test_request_percentage_throttles_210_ms_then_caps_at_one_window():
    # ClientRequestQuotaManagerTest.testRequestPercentageQuotaViolation, quota 1 % (10 ms/s).
    # 10 x 4 ms at 1 s intervals, then 67.1 ms at +10.5 s:
    # O = (40 + 67.1) ms / 10.5 s = 10.2 ms/s = 1.02 %; X = (1.02 - 1) / 1 * 10 500 = 210 ms.
    enforcer = Enforcer(snapshot(({"user": "ANONYMOUS", "client-id": "test-client"}, {"request_percentage": 1})))
    request = enforcer.request
    now = T0
    for _ in range(10):
        assert request.record("ANONYMOUS", "test-client", millis_to_percent(4), now) == 0
        now += 1000
    now += 500
    throttle = request.record("ANONYMOUS", "test-client", millis_to_percent(67.1), now)
    assert throttle == 210
    now += throttle
    for _ in range(11):
        request.record("ANONYMOUS", "test-client", millis_to_percent(4), now)
        now += 1000
    assert request.record("ANONYMOUS", "test-client", 0, now) == 0
    # 500 ms spike: (O-T)/T*W is far above one window, so boundedThrottleTime caps it at 1000 ms,
    # for the spike and for each of 10 zero records 1 s apart; 0 once the spike is purged.
    assert request.record("ANONYMOUS", "test-client", millis_to_percent(500), now) == 1000
    for _ in range(10):
        now += 1000
        assert request.record("ANONYMOUS", "test-client", 0, now) == 1000
    now += 1000
    assert request.record("ANONYMOUS", "test-client", 0, now) == 0


def test_request_time_in_nanoseconds_is_percent_of_a_thread():
    # 5 ms of thread time = 5e6 ns * 100 / 1e9 = 0.5 percent-seconds; over the 10 s start-up
    # window that is 0.05 %: within a 0.1 % quota. 15 ms more: 2.0/10 = 0.2 % -> (0.2-0.1)/0.1*10 000
    # = 10 000 ms, capped at one sample window (1000 ms).
    enforcer = Enforcer(snapshot(({"user": "u"}, {"request_percentage": 0.1})))
    assert enforcer.record_request_time("u", "c", 5_000_000, T0) == 0
    assert enforcer.record_request_time("u", "c", 15_000_000, T0) == 1000


@pytest.mark.parametrize("strict,expected", [(True, [0, 0, 8000]), (False, [0, 8000, 17000])])
def test_token_bucket_strict_and_permissive_vectors(strict, expected):
    # Strict/PermissiveControllerMutationQuotaTest: Q = 10/s, N = 10, W = 1 s, burst B = 10*1*10 = 100.
    # 90 -> tokens 10; 90 -> -80; third 90: strict rejects (tokens < 0 before recording) with
    # round(80/10*1000) = 8000 ms; permissive records it: -170 -> 17 000 ms.
    config = EnforcementConfig(controller_samples=10, controller_window_ms=1000)
    enforcer = Enforcer(snapshot(({"user": "u"}, {"controller_mutation_rate": 10})), config)
    decisions = [enforcer.record_mutations("u", "c", 90, T0, strict) for _ in range(3)]
    assert [d.throttle_ms for d in decisions] == expected
    assert [d.rejected for d in decisions] == [False, False, strict]
    # 5 s later the bucket has refilled 50 tokens: strict -80+50 = -30 -> 3000 ms (rejected again);
    # permissive -170+50 = -120 -> 12 000 ms.
    later = enforcer.record_mutations("u", "c", 0, T0 + 5000, strict)
    assert later.throttle_ms == (3000 if strict else 12_000)


def test_controller_mutation_manager_vector():
    # ControllerMutationQuotaManagerTest: ClientQuotaManagerConfig(10, 1) -> N = 10, Q = 10/s, B = 100.
    # 10 permits at 1 s intervals x 10: each second refills what was taken, the bucket is full (100).
    # 110 (strict: checked before recording, 100 >= 0) is accepted -> tokens -10; the next 110 is
    # rejected: round(10/10*1000) = 1000 ms; after sleeping it the bucket is back at 0 -> accepted.
    enforcer = Enforcer(
        snapshot(({"user": "ANONYMOUS", "client-id": "test-client"}, {"controller_mutation_rate": 10})),
        EnforcementConfig(controller_samples=10, controller_window_ms=1000),
    )
    now = T0
    for _ in range(10):
        assert enforcer.record_mutations("ANONYMOUS", "test-client", 10, now, True).throttle_ms == 0
        now += 1000
    assert enforcer.record_mutations("ANONYMOUS", "test-client", 110, now, True).throttle_ms == 0
    rejected = enforcer.record_mutations("ANONYMOUS", "test-client", 110, now, True)
    assert rejected.rejected and rejected.throttle_ms == 1000
    now += rejected.throttle_ms
    accepted = enforcer.record_mutations("ANONYMOUS", "test-client", 110, now, True)
    assert (accepted.throttle_ms, accepted.rejected) == (0, False)


def test_exactly_20_of_40_same_instant_connections_accepted():
    # ConnectionQuotasTest (N = 2, W = 1 s), ip limit 20: at one instant the window is padded to
    # (N-1)*W = 1 s, so the 21st connection measures 21/1 s > 20 and is dropped (and unrecorded);
    # every later one too. An instant burst accepts limit * (N-1) * Wsec = 20.
    enforcer = Enforcer(
        snapshot(({"ip": "10.0.0.1"}, {"connection_creation_rate": 20})), EnforcementConfig(samples=2, window_ms=1000)
    )
    decisions = [enforcer.connection_attempt("10.0.0.1", T0) for _ in range(40)]
    assert sum(d.accept for d in decisions) == 20
    assert all(d.accept for d in decisions[:20])
    # 21/1 s vs 20: X = (21-20)/20*1000 = 50 ms until the socket is closed
    assert {d.delay_ms for d in decisions[20:]} == {50}
    # unrecorded: the ip rate stays at 20 connections over 1 s
    rates = {m.tags.get("ip"): m.value for m in enforcer.metrics(T0) if m.name == "connection-accept-rate"}
    assert rates == {"10.0.0.1": 20.0}


def test_rate_with_no_prior_samples():
    # RateTest.testRateWithNoPriorAvailableSamples: value / ((W - 1 ms) + (N-1)*W) at W - 1 ms.
    for samples in (1, 11):
        for window_ms in (1, 11, 1000):
            rate = SampledRate(samples, window_ms)
            rate.record(1000, T0)
            now = T0 + window_ms - 1
            expected = 1000 / (((window_ms - 1) + (samples - 1) * window_ms or 1) / 1000.0)
            assert math.isclose(rate.measure(now), expected, rel_tol=1e-9)


def test_rate_is_consistent_after_the_first_window():
    # RateTest.testRateIsConsistentAfterTheFirstWindow: N = 2, W = 1 s, one event every 100 ms:
    # the measured rate stays in [10, 11] and is the same when measured twice at the same ms.
    rate = SampledRate(2, 1000)
    now = T0
    for _ in range(100):
        rate.record(1, now)
        now += 100
        if now - T0 >= 1000:
            first = rate.measure(now)
            assert 10 <= first <= 11
            assert rate.measure(now) == first


def test_overlapping_sample_is_kept_and_obsolete_sample_purged():
    # SampledStatTest: a sample whose last event is within N*W is kept even if it started before
    # the window (3.8+); one with no event within N*W is purged (reset to now, value 0).
    rate = SampledRate(2, 1000)
    rate.record(5, T0)
    rate.record(5, T0 + 999)  # same sample, last event at +999
    rate.record(7, T0 + 1000)
    assert rate.total(T0 + 2500) == 17  # 2500 - 999 < 2000: kept although it started at T0
    assert rate.total(T0 + 2999) == 7  # 2999 - 999 >= 2000: purged
    legacy = SampledRate(2, 1000, legacy_pre_3_8=True)
    legacy.record(5, T0)
    legacy.record(5, T0 + 999)
    legacy.record(7, T0 + 1000)
    assert legacy.total(T0 + 2000) == 7  # pre-3.8 purges by start: 2000 - 0 >= 2000


def test_throttle_time_ms_public_function_caps():
    rate = SampledRate()
    rate.record(20_000, T0)
    assert throttle_time_ms(rate, 1000, T0) == 10_000
    assert throttle_time_ms(rate, 1000, T0, cap_ms=1000) == 1000
    assert throttle_time_ms(rate, 5000, T0) == 0


def test_java_round_is_half_up_not_bankers():
    assert [java_round(x) for x in (2.5, 3.5, -2.5, -0.5, 0.49999999999999994, 2100.4999)] == [3, 4, -2, 0, 0, 2100]
    assert java_round(float("nan")) == 0
