"""The fleet's coordination link: this gateway instance's usage reports to a topic on the upstream
cluster, every other instance's read back, and the resulting share applied to its sensors.

The algorithm is the pure core's (``kconfigs_enforcement.fleet_share``); this adapter does the I/O
on one daemon thread, every ``period_ms``:

1. read every report that arrived (one partition, no consumer group: every instance reads all of
   them, from the end at start), stamped with this host's monotonic clock on receipt;
2. measure each live produce/fetch sensor's rate (its demand here) and allocate this instance's
   share of its quota (``FleetView.allocate``);
3. hold each sensor to that share (``ClientQuotaManager.set_fleet_share``: the bound every charge
   reads, the native data plane's included);
4. send this instance's report (``encode_report``: 12 bytes per active entity), keyed by its id.

``request_percentage`` stays per instance: it is a share of one broker's request-handler time,
and each instance measures its own threads' time, not a broker's.

The topic is created when missing (1 partition, ``cleanup.policy=delete``, one minute of
retention: a report is worth ``expiry_ms``, so nothing older is ever read). ACLs for the gateway's
principal: Describe, Read and Write on the topic, and Create on it (or the cluster) unless an
operator creates it.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from kconfigs.clock import MONOTONIC
from kconfigs_enforcement.fleet_share import (
    BYTES_PER_ENTITY,
    DEFAULT_EXPIRY_MS,
    DEFAULT_PERIOD_MS,
    FleetView,
    ReportBoard,
    decode_report,
    demand_estimate,
    encode_report,
    entity_digest,
)
from kconfigs_enforcement.stats import UNLIMITED

log = logging.getLogger("kconfigs.gateway")

#: a throttle this recent holds an entity's share (the data plane's throttles are drained every
#: second, so one second more than the quota's own window would be; this is both, with slack)
HELD_MS = 3_000

#: how long one attempt to reach the cluster may take, and the pause between attempts
BOOTSTRAP_TIMEOUT_MS, RECONNECT_S = 5_000, 1.0

#: topic configs when the gateway creates the topic
TOPIC_CONFIGS = {"cleanup.policy": "delete", "retention.ms": "60000", "segment.ms": "60000"}


def default_topic(fleet: str) -> str:
    return f"__kconfigs_fleet_{fleet}"


@dataclass(frozen=True)
class EntityShare:
    """One entity's state on this instance, for metrics and the usage log."""

    quota_type: str  # Produce, Fetch
    user_tag: str
    client_tag: str
    share: float  # this instance's share of the quota (bytes/s)
    fleet_rate: float  # the fleet's total rate (bytes/s): every live instance's demand


class FleetLink:
    """``managers``: called under ``lock``, returns the quota managers whose sensors the fleet
    shares (``[]`` before the first quota snapshot)."""

    def __init__(
        self,
        fleet: str,
        bootstrap: str,
        managers: Callable[[], list[Any]],
        lock: Any,
        topic: str | None = None,
        period_ms: int = DEFAULT_PERIOD_MS,
        expiry_ms: int = DEFAULT_EXPIRY_MS,
        clock_ms: Callable[[], int] = MONOTONIC.now_ms,
        client_options: dict | None = None,
        bootstrap_timeout_ms: int = BOOTSTRAP_TIMEOUT_MS,
    ):
        self.fleet = fleet
        self.topic = topic or default_topic(fleet)
        self.instance_id = uuid.uuid4().hex
        self._bootstrap = bootstrap
        self._managers = managers
        self._lock = lock
        self._period_ms = period_ms
        self._clock_ms = clock_ms
        self._client_options = client_options or {}
        self._bootstrap_timeout_ms = bootstrap_timeout_ms
        self.view = FleetView(self.instance_id, ReportBoard(expiry_ms))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._connector: threading.Thread | None = None
        self._producer = None
        self._consumer = None
        self._last_ack_ms: int | None = None
        self._started_ms = clock_ms()
        self.reachable = False
        self._said_unreachable = False
        self.shares: list[EntityShare] = []
        self.fleet_rates: dict[tuple[str, str, str], float] = {}  # (quota type, user tag, client tag)
        self.bytes_sent = 0
        self.reports_sent = 0
        self.entities_reported = 0
        self.members: tuple[str, ...] = (self.instance_id,)
        self._digests: dict[str, int] = {}  # sensor name -> entity digest

    # --- life cycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"fleet-{self.fleet}", daemon=True)
        self._thread.start()
        self._connector = threading.Thread(target=self._keep_connected, name=f"fleet-{self.fleet}-connect", daemon=True)
        self._connector.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop reporting and tell the others (their share grows at once, not after the expiry)."""
        self._stop.set()
        for thread in (self._thread, self._connector):
            if thread is not None:
                thread.join(timeout_s)
        producer, consumer = self._producer, self._consumer
        if producer is not None:
            try:
                producer.send(self.topic, key=self.instance_id.encode(), value=encode_report({}, leaving=True))
                producer.flush(timeout=1.0)
            except Exception as err:  # noqa: BLE001 - the others expire this instance anyway
                log.info("fleet %s: could not say this instance leaves (%s)", self.fleet, err)
            producer.close(timeout=1.0)
        if consumer is not None:
            consumer.close()

    # --- the loop ---------------------------------------------------------------------------
    def _run(self) -> None:
        """Every period, whether the topic is reachable or not: the shares are applied either way
        (from the reports, or the safe share)."""
        while not self._stop.is_set():
            started = self._clock_ms()
            if self._consumer is not None:
                try:
                    self._read_reports()
                except Exception as err:  # noqa: BLE001 - any client failure: serve on the safe share
                    self._drop_clients(err)
            self._allocate_and_report()
            self._update_reachability()
            self._stop.wait(max(0.0, (self._period_ms - (self._clock_ms() - started)) / 1000))

    def _keep_connected(self) -> None:
        """Make the clients (and the topic) when there are none, on a thread of its own: a
        cluster that does not answer blocks a client's bootstrap for its timeout."""
        while not self._stop.is_set():
            if self._producer is None:
                try:
                    self._connect()
                except Exception as err:  # noqa: BLE001 - retried; the loop serves on the safe share
                    log.debug("fleet %s: cannot reach the coordination topic: %s", self.fleet, err)
            self._stop.wait(RECONNECT_S)

    def _connect(self) -> None:
        from kafka import KafkaConsumer, KafkaProducer, TopicPartition

        from kconfigs_enforcement.gateway.config import parse_address
        from kconfigs_enforcement.gateway.health import unreachable_reason

        # a TCP dial first: a kafka-python client whose bootstrap fails leaves its sockets open
        addresses = [parse_address(address, "bootstrap server") for address in self._bootstrap.split(",")]
        reason = unreachable_reason(addresses, self._bootstrap_timeout_ms / 1000)
        if reason is not None:
            raise ConnectionError(f"{self._bootstrap}: {reason}")
        options = {"bootstrap_servers": self._bootstrap.split(","), **self._client_options}
        self._ensure_topic(options)
        consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, **options)
        try:
            partition = TopicPartition(self.topic, 0)
            consumer.assign([partition])
            consumer.seek_to_end(partition)
            # a send never waits longer than half a period for metadata: the loop goes on
            producer = KafkaProducer(acks=1, linger_ms=0, max_block_ms=self._period_ms // 2, retries=0, **options)
        except Exception:
            consumer.close()
            raise
        if self._stop.is_set():  # stopped while connecting: stop() has closed what it saw
            producer.close(timeout=0.5)
            consumer.close()
            return
        # both at once, from this thread: the loop reads and sends only through a complete pair
        self._consumer, self._producer = consumer, producer

    def _ensure_topic(self, options: dict) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError

        admin = KafkaAdminClient(bootstrap_timeout_ms=self._bootstrap_timeout_ms, **options)
        try:
            if self.topic in admin.list_topics():
                return
            replicas = min(3, len(admin.describe_cluster()["brokers"]))
            try:
                admin.create_topics([NewTopic(self.topic, 1, replicas, topic_configs=TOPIC_CONFIGS)])
                log.info("fleet %s: created the coordination topic %s", self.fleet, self.topic)
            except TopicAlreadyExistsError:  # another instance created it first
                pass
        finally:
            admin.close()

    def _drop_clients(self, err: BaseException) -> None:
        if self.reachable or self._last_ack_ms is None:
            log.debug("fleet %s: coordination topic: %s", self.fleet, err)
        for client in (self._producer, self._consumer):
            if client is not None:
                try:
                    client.close(timeout=0.5) if client is self._producer else client.close()
                except Exception:  # noqa: BLE001 - closing a broken client
                    pass
        self._producer = self._consumer = None

    def _read_reports(self) -> None:
        batches = self._consumer.poll(timeout_ms=0, max_records=10_000)
        now = self._clock_ms()
        for records in batches.values():
            for record in records:
                sender = (record.key or b"").decode(errors="replace")
                if sender == self.instance_id or not sender:
                    continue
                try:
                    demands, leaving = decode_report(record.value)
                except ValueError as err:
                    log.warning("fleet %s: report from %s ignored: %s", self.fleet, sender, err)
                    continue
                if leaving:
                    self.view.board.leave(sender)
                else:
                    self.view.board.receive(sender, demands, now)

    def _allocate_and_report(self) -> None:
        now = self._clock_ms()
        with self._lock:
            sensors = [(m, s) for m in self._managers() for s in list(m.sensors.values())]
            quotas, demands, named, digests = {}, {}, {}, {}
            for manager, sensor in sensors:
                quota = manager.quota_of(sensor)
                if quota == UNLIMITED:
                    continue
                digest = self._digests.get(sensor.name)
                if digest is None:
                    digest = entity_digest(sensor.name)
                digests[sensor.name] = digest
                named[digest] = (manager, sensor)
                quotas[digest] = quota
                rate = sensor.measure(now)
                if rate > 0:
                    demands[digest] = demand_estimate(rate, sensor.bound, self._throttled_lately(manager, sensor, now))
            demands = self.view.smooth(demands)
            self._digests = digests  # the live sensors' only: names churn
            allocations = self.view.allocate(quotas, demands, now)
            live = self.view.live_instances(now)
            new_share = 1.0 / (len(live) if len(live) > 1 else self.view.last_fleet_size)
            shares, rates = [], {}
            for digest, (manager, sensor) in named.items():
                manager.new_sensor_share = new_share
                allocation = allocations.get(digest)
                fraction = new_share if allocation is None else allocation.share / quotas[digest]
                manager.set_fleet_share(sensor, fraction)
                fleet_rate = self.view.fleet_demand(digest, demands.get(digest, 0.0))
                tags = (manager.quota_type, sensor.tags["user"], sensor.tags["client-id"])
                rates[tags] = fleet_rate
                shares.append(EntityShare(*tags, fraction * quotas[digest], fleet_rate))
            for manager in self._managers():
                manager.new_sensor_share = new_share
        self.shares, self.fleet_rates = shares, rates
        self.members = tuple(sorted(live))
        if self._producer is None:
            return
        report = encode_report(demands)
        try:
            future = self._producer.send(self.topic, key=self.instance_id.encode(), value=report)
        except Exception as err:  # noqa: BLE001 - the buffer is full or the metadata unknown
            self._drop_clients(err)
            return
        future.add_callback(self._acknowledged)
        self.bytes_sent += len(report)
        self.reports_sent += 1
        self.entities_reported += len(demands)

    def _throttled_lately(self, manager, sensor, now_ms: int) -> bool:
        """Whether a client of ``sensor`` was throttled within ``HELD_MS`` (the throttle-time
        sensor Kafka keeps per entity; the data plane's throttles reach it within a second)."""
        name = f"{manager.quota_type}ThrottleTime-{sensor.tags['user']}:{sensor.tags['client-id']}"
        throttles = manager.throttle_sensors.get(name)
        return throttles is not None and now_ms - throttles.last_record_ms <= HELD_MS

    def _acknowledged(self, _metadata) -> None:
        self._last_ack_ms = self._clock_ms()

    def _update_reachability(self) -> None:
        """Reachable while a report was acknowledged within the expiry; said on each change."""
        now = self._clock_ms()
        since = self._last_ack_ms if self._last_ack_ms is not None else self._started_ms
        reachable = self._last_ack_ms is not None and now - since <= self.view.board.expiry_ms
        never_reached = self._last_ack_ms is None and now - self._started_ms > self.view.board.expiry_ms
        if reachable and not self.reachable:
            log.info("fleet %s: coordination topic %s reachable: sharing quotas by demand", self.fleet, self.topic)
        elif not reachable and (self.reachable or (never_reached and not self._said_unreachable)):
            log.warning(
                "fleet %s: coordination topic %s unreachable: serving on the safe share "
                "(the last share for %d ms, then quota / %d, the last fleet size)",
                self.fleet,
                self.topic,
                self.view.board.expiry_ms,
                self.view.last_fleet_size,
            )
            self._said_unreachable = True
        self.reachable = reachable

    # --- what operators see -----------------------------------------------------------------
    def fleet_rate_for(self, kind: str, user: str | None, client_id: str | None) -> float | None:
        """The fleet's total rate for a usage-log entry (None: not a shared kind or entity)."""
        from kconfigs.keys import QUOTA_KINDS

        key = QUOTA_KINDS.get(kind)
        if key is None:
            return None
        quota_type = key.metric_group  # only the shared kinds' sensors have fleet rates
        user, client_id = user or "", client_id or ""
        rates = self.fleet_rates
        # a sensor's tags are the names its quota's level keeps ("" for the one it does not)
        for tags in ((user, client_id), (user, ""), ("", client_id), ("", "")):
            rate = rates.get((quota_type, *tags))
            if rate is not None:
                return rate
        return None

    def readiness_detail(self) -> str:
        state = "sharing" if self.reachable else "unreachable topic: safe share"
        return f"fleet {self.fleet} ({state}): {len(self.members)} members {','.join(self.members)}"

    @property
    def bytes_per_entity(self) -> int:
        return BYTES_PER_ENTITY
