"""The fleet link without its topic: a gateway that cannot reach the coordination topic keeps
serving on the safe share (quota / the last fleet size it saw), and says so in /readyz's detail
and its metrics; the fleet settings' checks."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from kconfigs.clock import MONOTONIC
from kconfigs.errors import ValidationError
from kconfigs_enforcement import EnforcementConfig, Enforcer, QuotaSnapshot
from kconfigs_enforcement.gateway.config import config_from_mapping
from kconfigs_enforcement.gateway.fleet_link import FleetLink
from kconfigs_enforcement.gateway.metrics import FleetCollector, GatewayStats

QUOTA = 900_000


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_instance_cut_off_from_the_topic_holds_quota_over_the_last_fleet_size_and_says_so():
    enforcer = Enforcer(
        QuotaSnapshot.from_records([({"client-id": None}, {"producer_byte_rate": QUOTA})]), EnforcementConfig()
    )
    enforcer.record_produce("", "app", 10_000, MONOTONIC.now_ms())
    sensor = enforcer.produce.sensor_for("", "app", MONOTONIC.now_ms())
    link = FleetLink(
        "f1",
        f"127.0.0.1:{closed_port()}",
        lambda: [enforcer.produce],
        threading.RLock(),
        period_ms=100,
        bootstrap_timeout_ms=300,
    )
    link.view.last_fleet_size = 3  # it had seen two others before the topic went away
    stats = GatewayStats()
    stats.registry.register(FleetCollector(link))
    link.start()
    try:
        deadline = time.monotonic() + 5
        while sensor.bound != QUOTA / 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sensor.bound == QUOTA / 3
        assert not link.reachable
        assert "unreachable topic: safe share" in link.readiness_detail()
        assert stats.registry.get_sample_value("kconfigs_fleet_coordination_up", {"fleet": "f1"}) == 0.0
        assert (
            stats.registry.get_sample_value(
                "kconfigs_fleet_share", {"fleet": "f1", "quota_type": "Produce", "user": "", "client_id": "app"}
            )
            == QUOTA / 3
        )
    finally:
        link.stop(timeout_s=5)


def test_fleet_settings_are_checked_in_one_line():
    base = {"upstreams": "127.0.0.1:9092", "listen": "127.0.0.1:19092"}
    assert config_from_mapping({**base, "fleet_name": "prod-eu.1"}).validate().fleet_name == "prod-eu.1"
    for settings, message in (
        ({"fleet_name": "a b"}, "fleet_name must be 1 to 200 of the characters a topic name takes"),
        ({"fleet_name": "a", "fleet_period_ms": 50}, "fleet_period_ms must be 100 to 500, got 50"),
        ({"fleet_topic": "t"}, "fleet_topic needs fleet_name"),
    ):
        with pytest.raises(ValidationError, match=message):
            config_from_mapping({**base, **settings}).validate()


def test_a_usage_line_finds_the_fleet_rate_of_the_sensor_its_entity_charges():
    link = FleetLink("f1", "127.0.0.1:9092", lambda: [], threading.RLock())
    link.fleet_rates = {("Produce", "", "app"): 5.0, ("Produce", "alice", ""): 7.0, ("Fetch", "", ""): 9.0}
    assert link.fleet_rate_for("produce", "bob", "app") == 5.0  # a client-id quota: shared by users
    assert link.fleet_rate_for("produce", "alice", "other") == 7.0  # a user quota
    assert link.fleet_rate_for("fetch", None, None) == 9.0
    assert link.fleet_rate_for("produce", "carol", "x") is None
    assert link.fleet_rate_for("request", "alice", "") is None  # request_percentage is per instance
