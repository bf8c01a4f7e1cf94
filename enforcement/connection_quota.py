"""Connection creation rate quotas (KIP-612, ``ConnectionQuotas`` in SocketServer.scala).

Per accepted socket, in Kafka's order (apache/kafka trunk 1eb7644):

1. record 1 on the broker-wide sensor (``max.connection.creation.rate``); on violation the
   *acceptor blocks* for ``min(round((O-T)/T*W), window)`` ms, so every later connection waits too;
2. after that wait, record 1 on the IP sensor (``Connection-Accept-Rate-<ip>``) if the ip's
   ``connection_creation_rate`` is not Int.MAX_VALUE. On violation the connection is unrecorded
   from the ip and broker sensors and **closed unread once the (capped) throttle has passed**.
   KIP-612's text says the connection is re-checked after the delay and accepted if the rate is
   back within quota; the shipped code does not re-check (``Acceptor`` queues a
   ``DelayedCloseSocket`` unconditionally), and this module follows the code.

Listener-level limits are not modelled (one listener). The broker sensor never expires; ip
sensors expire after an hour idle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from kconfigs_enforcement.quota_manager import BROKER_METRICS_SAMPLES, BROKER_METRICS_WINDOW_MS, MetricSample
from kconfigs_enforcement.rates import RateSensor
from kconfigs_enforcement.resolution import QuotaSnapshot
from kconfigs_enforcement.sensors import AvgSensor, SensorRegistry

INT_MAX = 2**31 - 1  # QuotaConfig.IP_CONNECTION_RATE_DEFAULT: "no ip quota"
GROUP = "socket-server-metrics"


@dataclass(frozen=True)
class ConnectionDecision:
    """``accept``: hand the socket on after ``delay_ms``; else close it unread after ``delay_ms``."""

    accept: bool
    delay_ms: int


class ConnectionQuotaManager:
    """Broker-wide and per-IP connection creation rates, each a ``Rate`` with the client quota
    window settings and a throttle capped at one sample window."""

    def __init__(
        self,
        snapshot: QuotaSnapshot,
        samples: int,
        window_ms: int,
        legacy_pre_3_8: bool,
        expiry_ms: int,
        broker_rate: float | None,
    ):
        self._snapshot = snapshot
        self._samples, self._window_ms, self._legacy = samples, window_ms, legacy_pre_3_8
        limit = float(INT_MAX if broker_rate is None else broker_rate)
        self.broker = RateSensor(
            samples, window_ms, legacy_pre_3_8, bound=limit, cap_ms=window_ms, name="Connection-Accept-Rate"
        )
        self.ip_sensors = SensorRegistry(expiry_ms)
        self.accept_throttle = AvgSensor(
            0, "ConnectionRateThrottleTime", {}, BROKER_METRICS_SAMPLES, BROKER_METRICS_WINDOW_MS
        )
        self.ip_throttle = AvgSensor(
            0, "ip-ConnectionRateThrottleTime", {}, BROKER_METRICS_SAMPLES, BROKER_METRICS_WINDOW_MS
        )
        self._acceptor_free_at_ms = None  # the acceptor thread is blocked until then
        self._open: dict[str, int] = {}

    def _ip_limit(self, ip: str) -> float:
        value = self._snapshot.resolve_ip(ip).value
        return float(INT_MAX) if value is None else value

    def attempt(self, ip: str, now_ms: int) -> ConnectionDecision:
        """A new socket from ``ip`` arrives at ``now_ms``."""
        start_ms = now_ms
        if self._acceptor_free_at_ms is not None and self._acceptor_free_at_ms > now_ms:
            start_ms = self._acceptor_free_at_ms  # still in the backlog while the acceptor waits
        broker_throttle_ms = max(self.broker.record_and_throttle(1, start_ms), 0)
        if broker_throttle_ms > 0:
            self.accept_throttle.record(float(broker_throttle_ms), start_ms)
        check_ms = start_ms + broker_throttle_ms  # waitForConnectionSlot, then time.milliseconds
        self._acceptor_free_at_ms = check_ms
        limit = self._ip_limit(ip)
        if limit != INT_MAX:
            sensor = self._ip_sensor(ip, limit, check_ms)
            ip_throttle_ms = sensor.record_and_throttle(1, check_ms)
            if ip_throttle_ms > 0:
                sensor.record_no_check(-1, check_ms)
                self.broker.record_no_check(-1, check_ms)
                self.ip_throttle.record(float(ip_throttle_ms), check_ms)
                return ConnectionDecision(False, check_ms - now_ms + ip_throttle_ms)
        self._open[ip] = self._open.get(ip, 0) + 1
        return ConnectionDecision(True, check_ms - now_ms)

    def _ip_sensor(self, ip: str, limit: float, now_ms: int) -> RateSensor:
        name = f"Connection-Accept-Rate-{ip}"
        sensor = self.ip_sensors.get(name)
        if sensor is None:
            sensor = RateSensor(
                self._samples,
                self._window_ms,
                self._legacy,
                bound=limit,
                cap_ms=self._window_ms,
                now_ms=now_ms,
                name=name,
                tags={"ip": ip},
                user=ip,
            )
            self.ip_sensors.add(name, sensor)
        return sensor

    def closed(self, ip: str, now_ms: int) -> None:
        """``ConnectionQuotas.dec``: connection counts only; rates are unaffected."""
        count = self._open.get(ip, 0)
        if count <= 1:
            self._open.pop(ip, None)
        else:
            self._open[ip] = count - 1

    def open_connections(self, ip: str) -> int:
        return self._open.get(ip, 0)

    def swap_snapshot(self, snapshot: QuotaSnapshot) -> None:
        """``updateIpConnectionRateQuota``: existing ip sensors get the new (or default) limit."""
        self._snapshot = snapshot
        for sensor in self.ip_sensors.values():
            sensor.bound = self._ip_limit(sensor.user)

    def expire(self, now_ms: int) -> int:
        return self.ip_sensors.expire(now_ms)

    def metrics(self, now_ms: int) -> Iterator[MetricSample]:
        yield MetricSample("broker-connection-accept-rate", GROUP, {}, self.broker.measure(now_ms))
        for sensor in list(self.ip_sensors.values()):
            yield MetricSample("connection-accept-rate", GROUP, dict(sensor.tags), sensor.measure(now_ms))
        yield MetricSample("connection-accept-throttle-time", GROUP, {}, self.accept_throttle.avg.measure(now_ms))
        yield MetricSample("ip-connection-accept-throttle-time", GROUP, {}, self.ip_throttle.avg.measure(now_ms))
