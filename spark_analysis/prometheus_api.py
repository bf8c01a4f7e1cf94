"""Quota series from a Prometheus server's HTTP API (``/api/v1/query_range``), as a dump file.

The series are written as Prometheus text lines with their own timestamps
(``name{labels} value ts_ms``, what ``promtool tsdb dump`` prints), so the same reader
(kconfigs_analysis.prometheus) reads them as it reads dumps: every jmx_exporter naming, the
``resource`` label, URL-encoded users, JMX-quoted client-ids, ``instance`` as the broker.

Every failure becomes one line (:class:`PrometheusUnavailable` / ValidationError): unreachable,
timed out, refused credentials, a TLS failure, a rejected query, an answer that is not
Prometheus', no quota series in the range.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import os
import socket
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Callable, Iterator

from kconfigs.clock import MONOTONIC
from kconfigs.errors import KconfigsError, ValidationError
from kconfigs_analysis import dumpfiles
from kconfigs_analysis import metric_names as names
from kconfigs_analysis.prometheus_time import chunks

#: every quota metric name the reader understands (PROM_QUOTA_NAME_RE, PROM_CONNECTION_NAME_RE);
#: PromQL regexes are RE2 and anchored on both ends
QUOTA_NAMES = '__name__=~"(?i)%s|%s"' % (
    names.PROM_QUOTA_NAME_RE.removeprefix("(?i)^").removesuffix("$"),
    names.PROM_CONNECTION_NAME_RE.removeprefix("(?i)^").removesuffix("$"),
)


class PrometheusUnavailable(KconfigsError):
    """The Prometheus server could not be queried (network, TLS, credentials, its answer)."""


@dataclass(frozen=True)
class PrometheusQuery:
    """What to read and how to reach the server. Times are epoch seconds; ``step_s`` is the
    query resolution (use the scrape interval: a larger step skips samples)."""

    url: str
    start_s: float
    end_s: float
    step_s: float = 15.0
    user: str | None = None
    password: str | None = None
    token: str | None = None
    ca_file: str | None = None
    insecure: bool = False
    timeout_s: float = 30.0
    match: str | None = None  # more label matchers, e.g. job="kafka" (PromQL syntax)

    @property
    def selector(self) -> str:
        """The quota series (every naming the reader knows), narrowed by ``match``."""
        return "{" + QUOTA_NAMES + (f", {self.match}" if self.match else "") + "}"

    def describe(self) -> str:
        """The input's name in reports: the URL and the range (UTC)."""

        def iso(s: float) -> str:
            return datetime.datetime.fromtimestamp(s, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

        return f"{self.url} [{iso(self.start_s)} .. {iso(self.end_s)}, step {self.step_s:g}s]"


def _headers(query: PrometheusQuery) -> dict[str, str]:
    headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
    if query.token:
        headers["Authorization"] = f"Bearer {query.token}"
    elif query.user is not None:
        pair = f"{query.user}:{query.password or ''}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    return headers


def _ssl_context(query: PrometheusQuery) -> ssl.SSLContext | None:
    if not query.url.lower().startswith("https:"):
        return None
    if query.insecure:
        return ssl._create_unverified_context()  # noqa: S323 (the operator asked for it)
    try:
        return ssl.create_default_context(cafile=query.ca_file)
    except (OSError, ssl.SSLError) as err:
        raise PrometheusUnavailable(f"Cannot use --prometheus-ca-file {query.ca_file}: {err}") from None


def _http_error(query: PrometheusQuery, err: urllib.error.HTTPError) -> KconfigsError:
    if err.code in (401, 403):
        return PrometheusUnavailable(
            f"Prometheus at {query.url} refused the request (HTTP {err.code} {err.reason}): "
            "check --prometheus-user/--prometheus-password or --prometheus-token"
        )
    with contextlib.suppress(Exception):
        body = json.loads(err.read())
        if body.get("error"):  # 400 bad_data / 422 execution: Prometheus says why
            return PrometheusUnavailable(
                f"Prometheus at {query.url} rejected the query ({body.get('errorType')}): {body['error']}"
            )
    return PrometheusUnavailable(
        f"Prometheus at {query.url} answered HTTP {err.code} {err.reason} "
        "(is the URL the server's root, e.g. http://host:9090?)"
    )


def _post(
    query: PrometheusQuery, form: dict, context: ssl.SSLContext | None, api: str = "query_range", kind: str = "matrix"
) -> dict:
    """One ``api`` request (``query_range`` answering a matrix, ``query`` a vector) -> its ``data``.

    :raises PrometheusUnavailable:
    """
    endpoint = query.url.rstrip("/") + "/api/v1/" + api
    request = urllib.request.Request(endpoint, urllib.parse.urlencode(form).encode(), _headers(query), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=query.timeout_s, context=context) as response:
            raw = response.read()
    except urllib.error.HTTPError as err:
        raise _http_error(query, err) from None
    except (TimeoutError, socket.timeout):
        raise PrometheusUnavailable(
            f"Prometheus at {query.url} did not answer within {query.timeout_s:g} s (--prometheus-timeout)"
        ) from None
    except urllib.error.URLError as err:
        reason = err.reason
        if isinstance(reason, ssl.SSLError):
            raise PrometheusUnavailable(
                f"TLS to {query.url} failed: {getattr(reason, 'verify_message', None) or reason} "
                "(--prometheus-ca-file, or --prometheus-insecure)"
            ) from None
        if isinstance(reason, (TimeoutError, socket.timeout)):
            raise PrometheusUnavailable(
                f"Prometheus at {query.url} did not answer within {query.timeout_s:g} s (--prometheus-timeout)"
            ) from None
        raise PrometheusUnavailable(
            f"Cannot reach Prometheus at {query.url}: {getattr(reason, 'strerror', None) or reason}"
        ) from None
    except (OSError, ValueError) as err:  # ValueError: a URL urllib cannot use
        raise PrometheusUnavailable(f"Cannot reach Prometheus at {query.url}: {err}") from None
    try:
        body = json.loads(raw)
        assert body["status"] == "success" and body["data"]["resultType"] == kind
    except Exception:
        raise PrometheusUnavailable(
            f"{query.url} did not answer like a Prometheus server (first bytes: {raw[:60]!r})"
        ) from None
    return body["data"]


def instant_query(query: PrometheusQuery) -> list[dict]:
    """The quota series' latest values (``/api/v1/query``, a vector: ``{metric, value: [ts, v]}``).

    :raises PrometheusUnavailable:
    """
    form = {"query": query.selector, "timeout": f"{query.timeout_s:g}"}
    return _post(query, form, _ssl_context(query), api="query", kind="vector")["result"]


def _label_value(value: str) -> str:
    """Escape a label value for the text exposition format (what the reader undoes)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def series_lines(result: list[dict]) -> Iterator[str]:
    """``query_range`` matrix entries -> ``name{labels} value ts_ms`` lines."""
    for series in result:
        metric = dict(series["metric"])
        name = metric.pop("__name__", "")
        labels = ",".join(f'{k}="{_label_value(v)}"' for k, v in sorted(metric.items()))
        prefix = f"{name}{{{labels}}}"
        for ts_s, value in series.get("values", []):
            yield f"{prefix} {value} {round(float(ts_s) * 1000)}\n"


@dataclass(frozen=True)
class Fetched:
    path: str  # the text file written
    series: int
    samples: int


def fetch_to_file(query: PrometheusQuery, directory: str, progress: Callable[[str], None] = lambda _: None) -> Fetched:
    """Read the quota series of the range, chunk by chunk, into a text file in ``directory``.

    :raises PrometheusUnavailable: the server could not be queried.
    :raises ValidationError: no quota series in the range.
    """
    context = _ssl_context(query)
    parts = chunks(query.start_s, query.end_s, query.step_s)
    path = os.path.join(directory, "prometheus.prom")
    series_seen, samples = set(), 0
    with open(path, "w", encoding="utf-8") as out:
        for number, (start_s, end_s) in enumerate(parts, 1):
            progress(f"querying Prometheus ({number}/{len(parts)})")
            # plain seconds: Prometheus reads floats there, and its duration syntax has no fractions
            data = _post(
                query,
                {
                    "query": query.selector,
                    "start": f"{start_s:.3f}",
                    "end": f"{end_s:.3f}",
                    "step": f"{query.step_s:g}",
                    "timeout": f"{query.timeout_s:g}",
                },
                context,
            )
            for series in data["result"]:
                series_seen.add(tuple(sorted(series["metric"].items())))
                samples += len(series.get("values", []))
            out.writelines(series_lines(data["result"]))
    if not samples:
        raise ValidationError(
            f"Prometheus at {query.url} has no Kafka quota series in {query.describe().split(' ', 1)[1]}: "
            "check --since/--until, and that it scrapes the brokers' jmx_exporter with quota rules "
            "(and that some quota is set: brokers record per-client metrics only then)"
        )
    return Fetched(path, len(series_seen), samples)


def dump_file_of(query: PrometheusQuery, progress: Callable[[str], None] = lambda _: None) -> dumpfiles.DumpFile:
    """The range as a DumpFile (format ``prometheus``) in a private temporary directory that is
    removed when the process exits; its ``path`` (shown in reports) is :meth:`PrometheusQuery.describe`."""
    fetched = fetch_to_file(query, tempfile.mkdtemp(dir=dumpfiles.scratch_dir()), progress)
    return dumpfiles.DumpFile(query.describe(), "prometheus", fetched.path, MONOTONIC.wall_ms())
