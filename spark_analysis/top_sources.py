"""Where ``kconfigs top`` reads quota metrics: Prometheus text endpoints scraped directly (a
broker's jmx_exporter, a kconfigs gateway's metrics listener) and a Prometheus server's instant
query. Each answers ``{source name: {series: reading}}``; a source that cannot be read raises
:class:`SourceUnreachable` with one line saying why.

Every jmx_exporter naming that ``analyze`` reads is understood here too, by the same parser
(``metric_names.parse_prometheus_sample``: lowercased or not, ``resource`` labels, URL-encoded
users, JMX-quoted client-ids).
"""

from __future__ import annotations

import math
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Iterable, Mapping

from kconfigs.errors import KconfigsError, UsageError
from kconfigs_analysis import metric_names as names
from kconfigs_analysis.top_model import Reading, SeriesKey

#: a scrape or query that takes longer than this marks its source unreachable for the refresh
DEFAULT_TIMEOUT_S = 2.0


class SourceUnreachable(KconfigsError):
    """A source could not be read this time (the last values stay on screen, greyed)."""


def readings_from_samples(samples: Iterable[tuple[str, Mapping[str, str], float]]) -> dict[SeriesKey, Reading]:
    """(metric name, labels, value) triples -> one Reading per quota series; others ignored."""
    rates: dict[SeriesKey, float] = {}
    throttles: dict[SeriesKey, float] = {}
    for name, labels, value in samples:
        metric = names.parse_prometheus_sample(name, dict(labels))
        if metric is None:
            continue
        key = SeriesKey(metric.kind, metric.user or "", metric.client_id or "", metric.ip or "")
        target = rates if metric.column == "rate" else throttles
        # one page names a series once; a naming scheme that repeats it must not double it
        target[key] = max(target.get(key, 0.0), 0.0 if math.isnan(value) else value)
    return {
        key: Reading(rates.get(key, 0.0), throttles.get(key))
        for key in rates.keys() | throttles.keys()
        if key.kind != "connection" or key in rates
    }


def parse_exposition(text: str) -> dict[SeriesKey, Reading]:
    """Quota readings in a Prometheus text exposition (a ``/metrics`` page).

    :raises SourceUnreachable: the page is not in the exposition format.
    """
    from prometheus_client.parser import text_string_to_metric_families

    try:
        samples = [(s.name, s.labels, float(s.value)) for f in text_string_to_metric_families(text) for s in f.samples]
    except (ValueError, TypeError, IndexError) as err:
        raise SourceUnreachable(f"not a Prometheus metrics page ({err})") from None
    return readings_from_samples(samples)


def metrics_url(address: str) -> str:
    """``host:port`` -> ``http://host:port/metrics``; a URL is used as given.

    :raises UsageError: neither a URL nor host:port.
    """
    if "://" in address:
        return address
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isascii() or not port.isdigit():
        raise UsageError(f"{address!r} is not HOST:PORT or a URL (http://host:port/metrics)")
    return f"http://{address}/metrics"


def _get(url: str, timeout_s: float) -> str:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as err:
        raise SourceUnreachable(f"{url} answered HTTP {err.code} {err.reason}") from None
    except (TimeoutError, socket.timeout):
        raise SourceUnreachable(f"{url} did not answer within {timeout_s:g} s") from None
    except urllib.error.URLError as err:
        reason = getattr(err.reason, "strerror", None) or err.reason
        raise SourceUnreachable(f"cannot reach {url}: {reason}") from None
    except (OSError, ValueError) as err:
        raise SourceUnreachable(f"cannot reach {url}: {err}") from None


@dataclass(frozen=True)
class ScrapedEndpoint:
    """A ``/metrics`` page: a broker's jmx_exporter or a kconfigs gateway's metrics listener."""

    name: str  # as the per-source detail shows it: "jmx 127.0.0.1:7071", "gateway 127.0.0.1:9404"
    url: str
    timeout_s: float = DEFAULT_TIMEOUT_S

    def read(self) -> dict[str, dict[SeriesKey, Reading]]:
        return {self.name: parse_exposition(_get(self.url, self.timeout_s))}


@dataclass(frozen=True)
class PrometheusServer:
    """A Prometheus server: one instant query for every quota series, one source per ``instance``."""

    name: str
    url: str
    match: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    def read(self) -> dict[str, dict[SeriesKey, Reading]]:
        from kconfigs_analysis.prometheus_api import PrometheusQuery, PrometheusUnavailable, instant_query

        query = PrometheusQuery(self.url, 0.0, 0.0, match=self.match, timeout_s=self.timeout_s)
        try:
            result = instant_query(query)
        except PrometheusUnavailable as err:
            raise SourceUnreachable(str(err)) from None
        by_instance: dict[str, list[tuple[str, dict, float]]] = {}
        for series in result:
            labels = dict(series["metric"])
            name = labels.pop("__name__", "")
            instance = labels.get("instance", "")
            by_instance.setdefault(instance, []).append((name, labels, float(series["value"][1])))
        return {f"{self.name} {instance}".rstrip(): readings_from_samples(s) for instance, s in by_instance.items()}
