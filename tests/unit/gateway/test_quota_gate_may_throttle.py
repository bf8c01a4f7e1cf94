"""QuotaGate.may_throttle decides which requests the gateway handles one at a time (as a broker
does) so that a throttle applies from the very next request."""

from harness.charging import charging_gateway
from kconfigs_enforcement.gateway.native_ext import ManualClock
from kconfigs_enforcement.gateway.quotas import QuotaGate


def _gate(records):
    gate = QuotaGate(window_num=2)
    gate.load(records)
    return gate


def test_no_quotas_means_nothing_is_quota_bound():
    assert not QuotaGate().may_throttle("alice", "app", ("produce", "request"))


def test_a_produce_quota_binds_produce_only_for_the_clients_it_resolves_to():
    gate = _gate([({"client-id": "app"}, {"producer_byte_rate": 1000.0})])
    assert gate.may_throttle("ANONYMOUS", "app", ("produce", "request"))
    assert not gate.may_throttle("ANONYMOUS", "app", ("fetch", "request"))
    assert not gate.may_throttle("ANONYMOUS", "other", ("produce", "request"))


def test_a_default_request_quota_binds_every_non_exempt_request():
    gate = _gate([({"user": None}, {"request_percentage": 50.0})])
    assert gate.may_throttle("bob", "x", ("request",))
    assert not gate.may_throttle("bob", "x", ())  # ApiVersions / SASL: exempt


def test_resolve_hands_out_the_sensor_the_gate_itself_records_into():
    """The native data plane records into the sensor ``resolve`` returns: it must be the one the
    gate's own charges and its metrics use, and None exactly when a charge records nothing."""
    gate = QuotaGate(window_num=2, clock=ManualClock(5_000))
    assert gate.resolve("produce", "ANONYMOUS", "app") == (None, False)  # no quotas at all
    gate.load([({"client-id": "app"}, {"producer_byte_rate": 1000.0})])
    sensor, finite = gate.resolve("produce", "ANONYMOUS", "app")
    assert finite and sensor.bound == 1000.0
    with charging_gateway(gate) as gateway:
        gateway.charge("produce", "ANONYMOUS", "app", "10.0.0.7", 700)
    sensor.record_and_throttle(800, 5_000)  # as the data plane does, from another thread
    rates = {s.tags["client-id"]: s.value for s in gate.metric_samples() if s.name == "byte-rate"}
    assert rates == {"app": 1500 / 1.0}
    other, finite = gate.resolve("produce", "ANONYMOUS", "other")  # enabled type: a sensor, unlimited
    assert other is not sensor and not finite
    assert gate.resolve("fetch", "ANONYMOUS", "app") == (None, False)  # fetch quotas disabled
    assert gate.resolve("producer_id", "ANONYMOUS", None) == (None, False)
