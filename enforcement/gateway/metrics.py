"""Prometheus metrics of the gateway (prometheus-client), Kafka's names in Prometheus style.

Quota metrics come from the ``enforcement`` library as Kafka ``MetricName``s (name, group, tags)
and are exported the way jmx_exporter's default format with ``lowercaseOutputName`` would:
``kafka.server:type=Produce,user=alice,client-id=app`` ``byte-rate`` becomes
``kafka_server_produce_byte_rate{user="alice",client_id="app"}``. They are per gateway instance,
like Kafka's per-broker quotas. Gateway-only metrics use the ``kconfigs_gateway_`` prefix.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(group: str, name: str) -> str:
    """``("Produce", "byte-rate")`` -> ``kafka_server_produce_byte_rate``;
    ``("socket-server-metrics", "connection-accept-rate")`` ->
    ``kafka_server_socket_server_metrics_connection_accept_rate``."""
    return _INVALID.sub("_", f"kafka_server_{group}_{name}".lower())


def prometheus_label(tag: str) -> str:
    return _INVALID.sub("_", tag)


class GatewayStats:
    """Counters the proxying code updates, plus collectors over the enforcer's metrics and the
    data plane's streaming counters (``streamed``: ``NativeGateway.streamed_frames``)."""

    def __init__(
        self,
        samples: Callable[[], Iterable[Any]] = lambda: (),
        streamed: Callable[[], dict[str, int]] = dict,
        limits: Callable[[], Iterable[Any]] = lambda: (),
    ):
        """``samples``: the enforcer's metrics; ``limits``: each live client sensor's quota
        (``QuotaGate.limit_samples``)."""
        self.registry = CollectorRegistry()
        self._open = Gauge(
            "kconfigs_gateway_open_connections", "Open client connections", ["listener"], registry=self.registry
        )
        self._accepted = Counter(
            "kconfigs_gateway_connections_accepted", "Accepted client connections", ["listener"], registry=self.registry
        )
        self._refused = Counter(
            "kconfigs_gateway_connections_throttled",
            "Connections closed by the IP connection-rate quota",
            ["listener"],
            registry=self.registry,
        )
        self._over_limit = Counter(
            "kconfigs_gateway_connections_over_limit",
            "Connections closed on accept by max_connections[_per_ip]",
            ["listener", "limit"],
            registry=self.registry,
        )
        self._throttled = Counter(
            "kconfigs_gateway_throttled_responses",
            "Responses after which the connection was muted",
            ["listener"],
            registry=self.registry,
        )
        self._bad = Counter(
            "kconfigs_gateway_bad_frames", "Connections closed for a malformed frame", ["side"], registry=self.registry
        )
        self._usage_lost = Counter(
            "kconfigs_gateway_usage_log_lost_lines",
            "Usage-log lines that could not be written (disk full, directory gone)",
            registry=self.registry,
        )
        self.registry.register(_QuotaCollector(samples))
        self.registry.register(_StreamedCollector(streamed))
        self.registry.register(_LimitCollector(limits))

    def connection_opened(self, listener: str) -> None:
        self._accepted.labels(listener).inc()
        self._open.labels(listener).inc()

    def connection_closed(self, listener: str) -> None:
        self._open.labels(listener).dec()

    def connection_refused(self, listener: str) -> None:
        self._refused.labels(listener).inc()

    def connection_over_limit(self, listener: str, limit: str) -> None:
        self._over_limit.labels(listener, limit).inc()

    def throttled(self, listener: str, count: int = 1) -> None:
        self._throttled.labels(listener).inc(count)

    def bad_frame(self, side: str) -> None:
        self._bad.labels(side).inc()

    def usage_lines_lost(self, count: int) -> None:
        self._usage_lost.inc(count)


class _QuotaCollector:
    """Exports the enforcer's samples on each scrape (no double bookkeeping)."""

    def __init__(self, samples: Callable[[], Iterable[Any]]):
        self._samples = samples

    def describe(self) -> list:
        return []  # samples are dynamic; an empty describe keeps registration lazy

    def collect(self) -> Iterable[GaugeMetricFamily]:
        grouped: dict[str, list[tuple[dict[str, str], float]]] = {}
        for sample in self._samples():
            labels = {prometheus_label(k): str(v) for k, v in dict(sample.tags).items()}
            grouped.setdefault(prometheus_name(sample.group, sample.name), []).append((labels, float(sample.value)))
        families = []
        for name, samples in grouped.items():
            # One family per name needs one label set: a tag some samples lack is "" for them
            # (Kafka's own convention for a quota level that does not apply).
            label_names = sorted({key for labels, _ in samples for key in labels})
            family = GaugeMetricFamily(name, f"Kafka metric {name}", labels=label_names)
            for labels, value in samples:
                family.add_metric([labels.get(k, "") for k in label_names], value)
            families.append(family)
        return families


QUOTA_LIMIT_METRIC = "kconfigs_gateway_quota_limit"


class _LimitCollector:
    """``kconfigs_gateway_quota_limit{quota_type, user, client_id}``: the quota an active entity is
    held to, labelled as its usage metric (``kafka_server_<quota_type>_...{user, client_id}``) so
    that one Grafana query divides usage by limit; in that metric's unit (bytes/s for Produce and
    Fetch, the request-time percentage for Request)."""

    def __init__(self, limits: Callable[[], Iterable[Any]]):
        self._limits = limits

    def describe(self) -> list:
        return []

    def collect(self) -> Iterable[GaugeMetricFamily]:
        samples = list(self._limits())
        if not samples:
            return []
        family = GaugeMetricFamily(
            QUOTA_LIMIT_METRIC,
            "Quota an active entity is held to, in the unit of its usage metric",
            labels=["quota_type", "user", "client_id"],
        )
        for sample in samples:
            tags = dict(sample.tags)
            family.add_metric([sample.group, tags.get("user", ""), tags.get("client-id", "")], float(sample.value))
        return [family]


class _StreamedCollector:
    """Large frames forwarded as they arrived, and the bytes of theirs spliced socket to socket:
    read from the data plane on each scrape (its counters are the only bookkeeping)."""

    def __init__(self, streamed: Callable[[], dict[str, int]]):
        self._streamed = streamed

    def describe(self) -> list:
        return []

    def collect(self) -> Iterable[CounterMetricFamily]:
        counts = self._streamed()
        if not counts:
            return []
        frames = CounterMetricFamily(
            "kconfigs_gateway_streamed_frames",
            "Large Produce requests and Fetch / ShareFetch responses forwarded as they arrived, not held whole",
            labels=["frame"],
        )
        frames.add_metric(["produce_request"], counts["produce_requests"])
        frames.add_metric(["fetch_response"], counts["fetch_responses"])
        frames.add_metric(["share_fetch_response"], counts["share_fetch_responses"])
        spliced = CounterMetricFamily(
            "kconfigs_gateway_spliced_bytes", "Bytes of streamed frames moved socket to socket by splice(2)"
        )
        spliced.add_metric([], counts["spliced_bytes"])
        return [frames, spliced]


class FleetCollector:
    """A fleet's state per instance: its share of each entity's quota, the fleet's total rate of
    that entity, whether the coordination topic is reachable, the members seen and the
    coordination bytes sent (``link``: a ``FleetLink``)."""

    def __init__(self, link: Any):
        self._link = link

    def describe(self) -> list:
        return []

    def collect(self) -> Iterable[Any]:
        link = self._link
        labels = ["fleet", "quota_type", "user", "client_id"]
        share = GaugeMetricFamily(
            "kconfigs_fleet_share", "This instance's share of the entity's quota (per second)", labels=labels
        )
        total = GaugeMetricFamily(
            "kconfigs_fleet_total_rate", "The fleet's total rate of the entity (per second)", labels=labels
        )
        for entity in link.shares:
            values = [link.fleet, entity.quota_type, entity.user_tag, entity.client_tag]
            share.add_metric(values, entity.share)
            total.add_metric(values, entity.fleet_rate)
        yield share
        yield total
        up = GaugeMetricFamily(
            "kconfigs_fleet_coordination_up",
            "1 while the coordination topic takes this instance's reports, 0 while it serves on the safe share",
            labels=["fleet"],
        )
        up.add_metric([link.fleet], 1.0 if link.reachable else 0.0)
        yield up
        members = GaugeMetricFamily("kconfigs_fleet_members", "Live instances of the fleet seen", labels=["fleet"])
        members.add_metric([link.fleet], len(link.members))
        yield members
        sent = CounterMetricFamily(
            "kconfigs_fleet_report_bytes", "Coordination bytes this instance produced", labels=["fleet"]
        )
        sent.add_metric([link.fleet], link.bytes_sent)
        yield sent


def start_http_endpoint(
    stats: GatewayStats,
    host: str,
    port: int,
    not_ready: Callable[[], str | None] = lambda: None,
    detail: Callable[[], str] = lambda: "",
) -> Any:
    """Serve the metrics on ``http://host:port/metrics``, liveness on ``/healthz`` (200 while the
    process serves) and readiness on ``/readyz`` (200, or 503 with ``not_ready()``'s one-line
    reason), either followed by ``detail()``'s line when it has one. Any other path is a 404, so a
    mistyped scrape path fails visibly instead of scraping the same page. Returns the server
    (``.shutdown()``). :raises OSError: the address cannot be bound (e.g. in use)."""
    import socket
    import threading
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from prometheus_client import make_wsgi_app

    metrics_app = make_wsgi_app(stats.registry)

    def text(start_response, status: str, body: str) -> list[bytes]:
        start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
        return [body.encode() + b"\n"]

    def app(environ, start_response):
        path = environ.get("PATH_INFO")
        if path == "/metrics":
            return metrics_app(environ, start_response)
        if path == "/healthz":
            return text(start_response, "200 OK", "ok")
        if path == "/readyz":
            reason, more = not_ready(), detail()
            more = f"\n{more}" if more else ""
            return (
                text(start_response, "200 OK", "ready" + more)
                if reason is None
                else text(start_response, "503 Service Unavailable", reason + more)
            )
        return text(start_response, "404 Not Found", "Not found: the metrics are at /metrics")

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args) -> None:  # scrapes and probes are not worth a log line each
            pass

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        address_family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]

    server = make_server(host, port, app, Server, handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    return server
