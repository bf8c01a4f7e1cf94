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
import re
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kconfigs.errors import KconfigsError, UsageError
from kconfigs_analysis import metric_names as names
from kconfigs_analysis.top_model import Reading, SeriesKey

#: a scrape or query that takes longer than this marks its source unreachable for the refresh
DEFAULT_TIMEOUT_S = 2.0


class SourceUnreachable(KconfigsError):
    """A source could not be read this time (the last values stay on screen, greyed)."""


def readings_from_samples(samples: Iterable[tuple[str, Mapping[str, str], float]]) -> dict[SeriesKey, Reading]:
    """(metric name, labels, value) triples (a Prometheus query's answer) -> one Reading per
    quota series; other series ignored."""
    rates: dict[SeriesKey, float] = {}
    throttles: dict[SeriesKey, float] = {}
    for name, labels, value in samples:
        metric = names.parse_prometheus_sample(name, dict(labels))
        if metric is None:
            continue
        key = SeriesKey(metric.kind, metric.user or "", metric.client_id or "", metric.ip or "")
        _keep(rates if metric.column == "rate" else throttles, key, value)
    return _readings(rates, throttles)


_LINE = re.compile(names.PROM_LINE_RE)
_LABEL = re.compile(names.PROM_LABEL_RE)
_LABEL_ESCAPE = re.compile(r"\\(.)")
#: a line that can hold a quota series starts with one of these (case-insensitive): the rest of a
#: broker's page (JVM, log, request metrics: thousands of lines) is skipped unparsed
_QUOTA_PREFIX = re.compile(r"(?i)kafka_server_")


def _label_value(raw: str) -> str:
    """A label value of the text format with ``\\``, ``\"`` and ``\n`` resolved."""
    return _LABEL_ESCAPE.sub(lambda m: names.PROM_LABEL_ESCAPES.get(m.group(1), m.group(1)), raw)


#: the series a line names is looked up by the line up to its value; bounded (cleared when full)
_MAX_CACHED_SERIES = 200_000


def parse_exposition(text: str, known: dict | None = None) -> dict[SeriesKey, Reading]:
    """Quota readings in a Prometheus text exposition (a ``/metrics`` page), read with the line
    and label syntax the analyze reader uses (``metric_names``).

    Hand-written rather than prometheus_client's parser, which reads every label character by
    character in Python: 0.12 s for a page of 4,000 quota series, 6 % of a core at a 2 s
    refresh. Here a broker's other lines (JVM, log, request metrics) are skipped unparsed, and
    ``known`` (kept by the caller between refreshes) maps each line's text up to its value to
    the series it names, so a page whose series did not change is read without a regex.

    :raises SourceUnreachable: the page has lines, none of them in the exposition format.
    """
    known = {} if known is None else known
    if len(known) > _MAX_CACHED_SERIES:
        known.clear()
    rates: dict[SeriesKey, float] = {}
    throttles: dict[SeriesKey, float] = {}
    seen_lines = False
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        seen_lines = True
        if not _QUOTA_PREFIX.match(line):
            continue
        head, _, value = line.rstrip().rpartition(" ")
        series = known.get(head, _MISSING)
        if series is _MISSING:
            series, value, stamped = _quota_series(line)
            if not stamped:  # a line with a timestamp has no fixed text before its value
                known[head] = series
        if series is None:
            continue
        try:
            number = float(value)
        except ValueError:
            continue
        key, column = series
        _keep(rates if column == "rate" else throttles, key, number)
    if seen_lines and not rates and not throttles and not _looks_like_exposition(text):
        raise SourceUnreachable("not a Prometheus metrics page")
    return _readings(rates, throttles)


_MISSING = object()


def _quota_series(line: str) -> tuple[tuple[SeriesKey, str] | None, str, bool]:
    """((series, column) or None, the value's text, whether the line carries a timestamp)."""
    match = _LINE.match(line)
    if match is None:
        return None, "", False
    labels = {key: _label_value(raw) for key, raw in _LABEL.findall(match.group(2) or "")}
    metric = names.parse_prometheus_sample(match.group(1) or "", labels)
    stamped = match.group(4) is not None
    if metric is None:
        return None, match.group(3), stamped
    key = SeriesKey(metric.kind, metric.user or "", metric.client_id or "", metric.ip or "")
    return (key, metric.column), match.group(3), stamped


def _looks_like_exposition(text: str) -> bool:
    lines = [line for line in text.splitlines()[:50] if line and line[0] != "#"]
    return any(_LINE.match(line) for line in lines)


def _keep(values: dict[SeriesKey, float], key: SeriesKey, value: float) -> None:
    """One source's value of a series (NaN: nothing measured). A source names a series once; a
    naming scheme that repeats it must not double it, so a repeat keeps the larger value."""
    values[key] = max(values.get(key, 0.0), 0.0 if math.isnan(value) else value)


def _readings(rates: dict[SeriesKey, float], throttles: dict[SeriesKey, float]) -> dict[SeriesKey, Reading]:
    return {
        key: Reading(rates.get(key, 0.0), throttles.get(key))
        for key in rates.keys() | throttles.keys()
        if key.kind != "connection" or key in rates
    }


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
    known_series: dict = field(default_factory=dict, compare=False, repr=False)

    def read(self) -> dict[str, dict[SeriesKey, Reading]]:
        return {self.name: parse_exposition(_get(self.url, self.timeout_s), self.known_series)}


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
