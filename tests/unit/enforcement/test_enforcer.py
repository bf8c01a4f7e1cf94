"""Enforcer behaviour: sharing, swaps, expiry, fetch unrecord, metrics, connections, producer ids."""

from __future__ import annotations

import math
import random

import pytest

from kconfigs_enforcement import EnforcementConfig, Enforcer, QuotaSnapshot
from kconfigs_enforcement.producer_ids import new_filter

T0 = 1_700_000_000_000


def enforcer_with(*records, **config):
    return Enforcer(QuotaSnapshot.from_records(records), EnforcementConfig(**config))


def test_clients_of_one_user_share_the_user_sensor():
    # 6000 B from c1 and 6000 B from c2 at the same instant: one sensor sees 12 000 B / 10 s =
    # 1200 B/s > 1000 -> (1200-1000)/1000*10 000 = 2000 ms on the second record.
    enforcer = enforcer_with(({"user": "alice"}, {"producer_byte_rate": 1000}))
    assert enforcer.record_produce("alice", "c1", 6000, T0) == 0
    assert enforcer.record_produce("alice", "c2", 6000, T0) == 2000


def test_default_user_quota_applies_to_each_user_separately():
    enforcer = enforcer_with(({"user": None}, {"producer_byte_rate": 1000}))
    assert enforcer.record_produce("alice", "c", 6000, T0) == 0
    assert enforcer.record_produce("bob", "c", 6000, T0) == 0


def test_quota_types_without_any_quota_record_nothing():
    enforcer = enforcer_with(({"user": "alice"}, {"producer_byte_rate": 1000}))
    assert enforcer.record_fetch("alice", "c", 10**9, T0) == 0
    assert not any(m.group == "Fetch" for m in enforcer.metrics(T0))


def test_swap_keeps_history_and_rebinds_the_bound():
    enforcer = enforcer_with(({"user": "alice"}, {"producer_byte_rate": 1000}))
    assert enforcer.record_produce("alice", "c", 9000, T0) == 0  # 900 B/s
    enforcer.swap_snapshot(QuotaSnapshot.from_records([({"user": "alice"}, {"producer_byte_rate": 500})]))
    # history kept: (9000 + 1000) / 10 s = 1000 B/s vs 500 -> 10 000 ms
    assert enforcer.record_produce("alice", "c", 1000, T0) == 10_000


def test_removed_quota_becomes_unlimited_but_keeps_recording():
    enforcer = enforcer_with(({"user": "alice"}, {"producer_byte_rate": 1000}))
    enforcer.record_produce("alice", "c", 50_000, T0)
    enforcer.swap_snapshot(QuotaSnapshot.from_records([]))
    assert enforcer.record_produce("alice", "c", 50_000, T0) == 0
    rates = [m.value for m in enforcer.metrics(T0) if m.name == "byte-rate"]
    assert rates == [10_000.0]  # Kafka <= 4.0: quotaTypesEnabled stays set, the sensor keeps counting


def test_sensors_expire_after_an_hour_idle_and_history_restarts():
    enforcer = enforcer_with(({"user": "alice"}, {"producer_byte_rate": 1000}))
    enforcer.record_produce("alice", "c", 9000, T0)
    assert enforcer.expire_sensors(T0 + 3_600_000) == 0  # not strictly more than an hour
    assert enforcer.expire_sensors(T0 + 3_600_001) == 1
    assert not any(m.group == "Produce" for m in enforcer.metrics(T0 + 3_600_001))


def test_throttled_fetch_is_unrecorded():
    # 20 000 B on a 1000 B/s quota: 2000 B/s -> 10 000 ms and the bytes are unrecorded (empty
    # response), so the byte-rate goes back to 0.
    enforcer = enforcer_with(({"client-id": "c"}, {"consumer_byte_rate": 1000}))
    assert enforcer.record_fetch("u", "c", 20_000, T0) == 10_000
    assert [m.value for m in enforcer.metrics(T0) if m.name == "byte-rate"] == [0.0]
    # a request-quota throttle unrecords the fetch bytes too
    enforcer.record_fetch("u", "c", 5000, T0, request_throttle_ms=300)
    assert [m.value for m in enforcer.metrics(T0) if m.name == "byte-rate"] == [0.0]


def test_throttle_time_metric_is_nan_until_throttled():
    enforcer = enforcer_with(({"user": "u"}, {"producer_byte_rate": 1000}))
    throttle = enforcer.record_produce("u", "c", 20_000, T0)
    assert not any(m.name == "throttle-time" for m in enforcer.metrics(T0))
    enforcer.record_throttle("Produce", "u", "c", throttle, T0)
    values = {(m.name, m.group): m.value for m in enforcer.metrics(T0)}
    assert values[("throttle-time", "Produce")] == 10_000.0
    # Avg over 2 x 30 s: NaN again once the sample is purged 60 s later
    later = {(m.name, m.group): m.value for m in enforcer.metrics(T0 + 60_000)}
    assert math.isnan(later[("throttle-time", "Produce")])


def test_broker_connection_rate_delays_the_acceptor():
    # broker limit 5/s, N = 11: an instant burst accepts 5 * 10 = 50 without delay; the 51st
    # measures 51/10 s -> (5.1-5)/5*10 000 = 200 ms delay (capped at 1000), then is accepted.
    enforcer = enforcer_with(broker_connection_rate=5)
    decisions = [enforcer.connection_attempt("10.0.0.9", T0) for _ in range(51)]
    assert all(d.accept for d in decisions)
    assert [d.delay_ms for d in decisions[-2:]] == [0, 200]
    # the acceptor was blocked: the next attempt at T0 is handled at T0 + 200 at the earliest
    assert enforcer.connection_attempt("10.0.0.9", T0).delay_ms >= 200


def test_ip_throttled_connection_is_dropped_after_the_delay():
    enforcer = enforcer_with(({"ip": None}, {"connection_creation_rate": 1}))
    decisions = [enforcer.connection_attempt("10.0.0.7", T0) for _ in range(11)]
    assert [d.accept for d in decisions] == [True] * 10 + [False]
    # 11/10 s vs 1/s: (1.1-1)/1*10 000 = 1000 ms, at the one-window cap; closed after it
    assert decisions[-1].delay_ms == 1000
    assert enforcer.connections.open_connections("10.0.0.7") == 10


def test_producer_ids_counts_only_unseen_ids():
    # quota 2 new ids/s: 20 new ids at once = 20/10 s = 2/s (not above); one more -> 21/10 = 2.1
    # -> (2.1-2)/2*10 000 = 500 ms. Ids already seen are not counted again.
    enforcer = enforcer_with(({"user": "alice"}, {"producer_ids_rate": 2}))
    assert enforcer.record_producer_ids("alice", range(20), T0) == 0
    assert enforcer.record_producer_ids("alice", range(20), T0) == 0
    assert enforcer.record_producer_ids("alice", [1000], T0) == 500
    assert enforcer.record_producer_ids("bob", range(10**4), T0) == 0  # no quota: not tracked
    assert enforcer.producer_ids.tracked_users() == 1


def test_producer_id_filters_rotate_and_forget_after_one_and_a_half_windows():
    enforcer = enforcer_with(({"user": "u"}, {"producer_ids_rate": 1000}), producer_id_filter_window_ms=1000)
    enforcer.record_producer_ids("u", [1], T0)
    rate_after = lambda t: [m.value for m in enforcer.metrics(t) if m.name == "rate"][0]  # noqa: E731
    enforcer.record_producer_ids("u", [1], T0 + 1200)  # second filter open; 1 still known (older)
    assert rate_after(T0 + 1200) == 1 / 10.2  # one id counted over the (N-1)*W + 200 ms window
    enforcer.record_producer_ids("u", [1], T0 + 2100)  # re-added to the newer filter: still known
    enforcer.record_producer_ids("u", [2], T0 + 5000)  # everything expired: a fresh pair
    assert enforcer.record_producer_ids("u", [1], T0 + 5001) == 0
    assert enforcer.expire_sensors(T0 + 6500) >= 1
    assert enforcer.producer_ids.tracked_users() == 0


def test_bloom_false_positive_rate_within_bound_on_a_million_ids():
    for fpr in (0.01, 0.001):
        bloom = new_filter(1_000_000, fpr)
        ids = random.Random(7).sample(range(2**62), 2_000_000)
        bloom.update(ids[:1_000_000])
        false_positives = sum(1 for pid in ids[1_000_000:] if pid in bloom)
        assert false_positives / 1_000_000 <= fpr
        sequential = new_filter(1_000_000, fpr)
        sequential.update(range(1_000_000))
        assert sum(1 for pid in range(10**7, 10**7 + 1_000_000) if pid in sequential) / 1_000_000 <= fpr


def test_deleting_every_user_quota_keeps_the_user_tag_shape_until_restart():
    # Kafka <= 4.0 only ORs quotaTypesEnabled: after the last user quota is deleted, clients are
    # still charged on (user, "") sensors (now unlimited), not moved back to ("", client-id).
    enforcer = enforcer_with(({"user": "alice"}, {"producer_byte_rate": 1000}))
    enforcer.swap_snapshot(QuotaSnapshot.from_records([({"client-id": "app"}, {"producer_byte_rate": 1000})]))
    assert enforcer.snapshot.resolve("bob", "app", "producer_byte_rate").metric_tags == {"user": "", "client-id": "app"}
    assert enforcer.snapshot.enabled_mask("producer_byte_rate") == 3
    fresh = QuotaSnapshot.from_records([({"client-id": "app"}, {"producer_byte_rate": 1000})])
    assert fresh.enabled_mask("producer_byte_rate") == 1


def test_legacy_pre_3_8_brokers_use_a_ring_of_n_samples():
    # N = 2, 100 B at t and t+900 every second (the last at 5000); measured at 5800.
    # 3.8+: ring of 3 keeps the samples opened at 3000 (last event 3900: 5800-3900 < 2000), 4000
    #       and 5000: 500 B over 5800-3000 = 2800 ms.
    # pre-3.8: ring of 2 keeps only 4000 and 5000: 300 B over 1800 ms.
    for legacy, expected in ((False, 500 / 2.8), (True, 300 / 1.8)):
        enforcer = enforcer_with(({"user": "u"}, {"producer_byte_rate": 10**9}), samples=2, legacy_pre_3_8=legacy)
        for t in range(0, 6000, 1000):
            enforcer.record_produce("u", "c", 100, T0 + t)
            if t + 900 < 5800:
                enforcer.record_produce("u", "c", 100, T0 + t + 900)
        rate = [m.value for m in enforcer.metrics(T0 + 5800) if m.name == "byte-rate"][0]
        assert rate == expected


def test_a_fetch_may_ask_for_at_most_the_quota_window_bytes():
    # Kafka's ClientQuotaManagerTest vector: quota 10, N=4 samples of 1 s -> 10 * 3 * 1 = 30
    enforcer = enforcer_with(({"client-id": "app"}, {"consumer_byte_rate": 10}), samples=4, window_ms=1000)
    assert enforcer.fetch.max_value_in_window("", "app") == 30
    assert enforcer.fetch.max_value_in_window("", "other") is None  # no quota for its tags: no cap
    defaults = enforcer_with(({"client-id": "app"}, {"consumer_byte_rate": 2_000_000}))  # N=11, W=1 s
    assert defaults.fetch.max_value_in_window("", "app") == 20_000_000
    assert enforcer_with().fetch.max_value_in_window("", "app") is None  # fetch quotas disabled


def test_a_fleet_share_bounds_the_sensor_every_charge_reads_and_survives_a_reload():
    # alice's quota is 1000 B/s; this instance holds 40 % of it: 9000 B over 10 s = 900 B/s is
    # over 400 -> (900 - 400) / 400 * 10 000 = 12 500 ms
    enforcer = enforcer_with(({"user": "alice"}, {"producer_byte_rate": 1000}))
    sensor = enforcer.produce.sensor_for("alice", "c", T0)
    assert enforcer.produce.quota_of(sensor) == 1000
    enforcer.produce.set_fleet_share(sensor, 0.4)
    assert sensor.bound == 400
    assert enforcer.record_produce("alice", "c", 9000, T0) == 12_500
    enforcer.swap_snapshot(QuotaSnapshot.from_records([({"user": "alice"}, {"producer_byte_rate": 2000})]))
    assert sensor.bound == 800 and enforcer.produce.quota_of(sensor) == 2000


def test_a_sensor_created_in_a_fleet_starts_at_the_share_for_new_entities_and_unlimited_stays_unlimited():
    enforcer = enforcer_with(({"user": "alice"}, {"producer_byte_rate": 900}), ({"user": "bob"}, {}))
    enforcer.produce.new_sensor_share = 1 / 3
    assert enforcer.produce.sensor_for("alice", "c", T0).bound == 300
    enforcer.fetch.new_sensor_share = 0.5
    assert enforcer.fetch.sensor_for("bob", "c", T0).bound == enforcer.fetch.quota_of(
        enforcer.fetch.sensor_for("bob", "c", T0)
    )


def test_a_fetch_is_capped_at_what_the_instances_share_lets_through_on_an_empty_window():
    # consumer_byte_rate 1000 B/s, 11 samples of 1 s: Q·(N-1)·W = 10 000 B; a third of it here
    enforcer = enforcer_with(({"user": "alice"}, {"consumer_byte_rate": 1000}))
    assert enforcer.fetch.max_value_in_window("alice", "c") == 10_000
    sensor = enforcer.fetch.sensor_for("alice", "c", T0)
    enforcer.fetch.set_fleet_share(sensor, 1 / 3)
    assert enforcer.fetch.max_value_in_window("alice", "c") == pytest.approx(10_000 / 3)
