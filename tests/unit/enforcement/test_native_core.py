"""The compiled rate core (enforcement/native) is built, is what enforcement runs on, and behaves
like the pure-Python classes where the exactness properties do not look (copies, errors, types)."""

from __future__ import annotations

import copy
import os

import pytest

from kconfigs_enforcement import EnforcementConfig, Enforcer, QuotaSnapshot, SampledRate, rates
from kconfigs_enforcement.native_rates import NativeRateSensor, NativeSampledRate
from kconfigs_enforcement.sensors import PureRateSensor
from kconfigs_enforcement.stats import PureSampledRate

T0 = 1_700_000_000_000


@pytest.mark.skipif(os.environ.get("KCONFIGS_PURE_PYTHON") == "1", reason="pure Python forced on purpose")
def test_enforcement_runs_on_the_native_core():
    assert rates.NATIVE, "enforcement/_native was not built: pip install needs cargo (see pyproject.toml)"
    assert SampledRate is NativeSampledRate
    snapshot = QuotaSnapshot.from_records([({"user": None}, {"producer_byte_rate": 1000})])
    enforcer = Enforcer(snapshot, EnforcementConfig())
    assert enforcer.record_produce("alice", "c", 20_000, T0) == 10_000  # the fresh-quota vector
    assert type(enforcer.produce.sensor_for("alice", "c", T0)) is NativeRateSensor


@pytest.mark.parametrize(
    "pair", [(NativeSampledRate, NativeRateSensor), (PureSampledRate, PureRateSensor)], ids=["native", "pure"]
)
def test_deepcopy_is_independent_and_keeps_every_field(pair):
    _rate_cls, sensor_cls = pair
    sensor = sensor_cls(
        11,
        1000,
        False,
        bound=500.0,
        cap_ms=1000,
        now_ms=T0,
        name="Produce-a:",
        tags={"user": "a", "client-id": ""},
        user="a",
        client_id="c",
    )
    sensor.record_and_throttle(300, T0)
    twin = copy.deepcopy(sensor)
    assert (twin.bound, twin.cap_ms, twin.last_record_ms, twin.name, twin.tags, twin.user, twin.client_id) == (
        500.0,
        1000,
        T0,
        "Produce-a:",
        {"user": "a", "client-id": ""},
        "a",
        "c",
    )
    assert twin.tags is not sensor.tags
    twin.record_and_throttle(10_000, T0 + 5)
    assert sensor.total(T0 + 5) == 300.0 and twin.total(T0 + 5) == 10_300.0
    assert [tuple(s.__dict__.values()) for s in sensor.samples_view()] == [(300, T0, T0)]


@pytest.mark.parametrize("rate_cls", [NativeSampledRate, PureSampledRate], ids=["native", "pure"])
def test_same_errors_and_properties(rate_cls):
    with pytest.raises(ValueError):
        rate_cls(0, 1000)
    with pytest.raises(ValueError):
        rate_cls(11, 0)
    rate = rate_cls(3, 500, legacy_pre_3_8=True)
    assert (rate.samples, rate.sample_window_ms, rate.legacy_pre_3_8) == (3, 500, True)
    with pytest.raises(TypeError):
        rate.record("12", T0)
    with pytest.raises(TypeError):
        rate_cls(11, 1000, bound=5.0)  # sensor keywords belong to the sensor classes only


def test_values_past_int64_fall_back_to_doubles_like_kafka():
    # Kafka sums doubles; the native core keeps ints exact up to int64 and treats larger values as doubles
    rate = NativeSampledRate(2, 1000)
    rate.record(2**70, T0)
    assert rate.total(T0) == float(2**70)
