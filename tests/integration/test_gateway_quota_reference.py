"""Kafka itself as the reference for the gateway's producer-quota accuracy.

The same flood clients as test_gateway_quotas.py run directly against a real Kafka 4.x KRaft
broker with the same window settings (``quota.window.num=2``, 1 s samples) and the same
``producer_byte_rate``, set through ``kconfigs --bootstrap-server``; the rate is measured by the
same client-side method (tests/integration/quota_accuracy.py: skip (N+1)·W, least-squares slope
of cumulative Produce bytes). What Kafka achieves for a client is what "correct" means for the
gateway: if these fail, the band, not the gateway, is wrong.
"""

from __future__ import annotations

import uuid

import pytest

from tests.integration.compat_support import run_kconfigs
from tests.integration.gateway_support import run_client_script
from tests.integration.quota_accuracy import (
    FLOOD_S,
    FLOODS,
    QUOTAS_BYTES_PER_SEC,
    WINDOW_NUM,
    steady_rate,
    steady_window,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def reference_broker(kraft_broker_factory):
    return kraft_broker_factory(extra_props={"quota.window.num": str(WINDOW_NUM), "quota.window.size.seconds": "1"})


@pytest.mark.parametrize("client", ["kafka-python", "librdkafka"])
def test_kafka_broker_holds_the_same_client_within_the_band(reference_broker, client):
    quota, client_id = QUOTAS_BYTES_PER_SEC[client], f"ref-{client}-{uuid.uuid4().hex[:6]}"
    bootstrap = reference_broker.bootstrap
    alter = run_kconfigs(
        [
            "--bootstrap-server",
            bootstrap,
            "--alter",
            "--add-config",
            f"producer_byte_rate={quota}",
            "--entity-type",
            "clients",
            "--entity-name",
            client_id,
        ]
    )
    assert alter.rc == 0, alter.stderr
    describe = run_kconfigs(
        ["--bootstrap-server", bootstrap, "--describe", "--entity-type", "clients", "--entity-name", client_id]
    )
    assert f"producer_byte_rate={float(quota)}" in " ".join(describe.stdout), describe.stdout
    run = run_client_script(
        FLOODS[client], bootstrap, f"ref-{uuid.uuid4().hex[:6]}", client_id, str(FLOOD_S), timeout_s=FLOOD_S + 90
    )
    rate = steady_rate(run["series"], *steady_window(run, WINDOW_NUM))
    print(f"{client} direct to Kafka {reference_broker.version}: {rate / quota:.3f}·Q")
    assert 0.95 * quota <= rate <= 1.05 * quota, rate / quota
    assert run["throttle_max_ms"] > 0
