"""Live reload from ZooKeeper: a quota written to ZooKeeper applies to the next requests; while
ZooKeeper is stopped the gateway keeps enforcing the last quotas; after ZooKeeper comes back a
change made meanwhile-or-after is picked up (resync) — all during traffic, on one connection."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from kconfigs.model import QuotaEntity
from kconfigs.stores.factory import StoreOptions, open_store
from kconfigs_enforcement.gateway.reload import QuotaReloader
from tests.integration.gateway_support import (
    USAGE_WINDOW_MS,
    GatewayThread,
    mean_rate,
    produce_until,
    read_usage,
    usage_inside,
    wait_until,
)

pytestmark = pytest.mark.integration
QUOTA_BYTES_PER_SEC = 100_000
RAISED_BYTES_PER_SEC = 1e10


def _set_quota(zk_connect: str, value: float) -> None:
    store = open_store(StoreOptions(zookeeper=zk_connect))
    try:
        store.alter(QuotaEntity(client_id="zk-live"), lambda _current: {"producer_byte_rate": str(int(value))})
    finally:
        store.close()


def _windows(usage, start_ms: float, end_ms: float) -> tuple[list[dict], int]:
    """The client's usage lines wholly inside [start_ms, end_ms], and how many windows that is."""
    lines = [l for l in read_usage(usage) if l["client_id"] == "zk-live" and l["kind"] == "produce"]
    return usage_inside(lines, start_ms, end_ms, USAGE_WINDOW_MS)


def test_zookeeper_outage_keeps_last_quotas_and_resyncs(tansu_broker, zk_server, zk_connect, tmp_path):
    usage = tmp_path / "usage.jsonl"
    _set_quota(zk_connect, QUOTA_BYTES_PER_SEC)
    gateway = GatewayThread(tansu_broker.bootstrap, usage_log_path=str(usage), quota_window_num=2)
    store = open_store(StoreOptions(zookeeper=zk_connect))
    reloader = QuotaReloader(store, gateway.loop, gateway.gateway.quotas.load)
    reloader.start()
    stop, errors = threading.Event(), []
    producer = threading.Thread(target=produce_until, args=(gateway.bootstrap, "zk-live", stop, errors))
    try:
        producer.start()
        time.sleep(4)
        outage_start = time.time() * 1000
        zk_server.stop()
        time.sleep(5)
        outage_end = time.time() * 1000
        zk_server.start()
        _set_quota(zk_connect, RAISED_BYTES_PER_SEC)  # written after the restart: must arrive
        # up to 60 s: ZooKeeper 3.8.0's startup race (see
        # test_reliability_gateway_faults) can hold the watch's reconnection for its 30 s handshake timeout
        deadline = time.monotonic() + 60
        while (
            time.monotonic() < deadline
            and gateway.gateway.quotas.quota_for("produce", "ANONYMOUS", "zk-live", None) != RAISED_BYTES_PER_SEC
        ):
            time.sleep(0.2)
        raised_at = time.time() * 1000
        time.sleep(4)
        stop.set()
        producer.join()
    finally:
        stop.set()
        reloader.close()
        store.close()
        gateway.stop()
    assert not errors, errors
    during, window_count = _windows(usage, outage_start, outage_end)
    assert during and all(l["quota"] == QUOTA_BYTES_PER_SEC for l in during)
    assert sum(l["throttle_ms"] for l in during) > 0  # still enforced with ZooKeeper down
    assert mean_rate(during, window_count, USAGE_WINDOW_MS) <= 1.3 * QUOTA_BYTES_PER_SEC
    after, _ = _windows(usage, raised_at + 2000, time.time() * 1000)
    assert after and all(l["quota"] == RAISED_BYTES_PER_SEC for l in after)
    assert sum(l["throttle_ms"] for l in after) == 0


def test_a_quota_hand_edited_to_something_not_a_number_keeps_its_previous_value(tansu_broker, zk_connect):
    """A ZooKeeper-mode broker that cannot parse a changed quota (ConfigHandler's toLong throws, the
    change notification is logged and skipped) goes on enforcing the quota it had: so does the
    gateway, for that key, while the entity's other keys change as written."""
    client_id = f"hand-{uuid.uuid4().hex[:6]}"
    entity = QuotaEntity(client_id=client_id)
    store = open_store(StoreOptions(zookeeper=zk_connect))
    gateway = GatewayThread(tansu_broker.bootstrap)
    reloader = QuotaReloader(store, gateway.loop, gateway.gateway.quotas.load)

    def enforced() -> tuple:
        quotas = gateway.gateway.quotas
        return quotas.quota_for("produce", None, client_id, None), quotas.quota_for("fetch", None, client_id, None)

    try:
        store.alter(entity, lambda _current: {"producer_byte_rate": "1024", "consumer_byte_rate": "2048"})
        reloader.start()
        assert wait_until(lambda: enforced() == (1024, 2048)), enforced()
        # the store writes what it is given, znode and change notification, as a hand edit does
        store.alter(entity, lambda _current: {"producer_byte_rate": "2MB", "consumer_byte_rate": "4096"})
        assert wait_until(lambda: enforced()[1] == 4096), enforced()
        assert enforced() == (1024, 4096)
    finally:
        reloader.close()
        store.close()
        gateway.stop()
