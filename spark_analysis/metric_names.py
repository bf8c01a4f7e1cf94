"""Pure parsing of broker metric names: JMX ObjectNames, JmxTool headers, jmx_exporter names.

No Spark and no I/O: the readers call these on the driver (headers are small) and reuse the
regular expressions inside Spark (Java and Python agree on the simple syntax used here).
Background: quota-enforcement.md §8 and admin-tools-and-metric-dumps.md §C.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kconfigs.keys import QUOTA_KINDS
from kconfigs.sanitize import desanitize

#: JMX ``type=`` group -> quota kind (the ``kind`` column of the canonical table).
GROUP_TO_KIND: dict[str, str] = {
    spelling: kind
    for kind in ("produce", "fetch", "request", "controller_mutation", "connection")
    for spelling in {
        QUOTA_KINDS[kind].metric_group.lower(),
        QUOTA_KINDS[kind].metric_group.lower().replace("-", "_"),
        kind,
    }
}

#: attribute -> canonical column. The "rate" attributes are Kafka's quota-checked Rate metrics;
#: ``throttle-time`` is an Avg of the throttle ms given (NaN = not throttled recently).
ATTRIBUTE_TO_COLUMN: dict[str, str] = {
    "byte-rate": "rate",
    "request-time": "rate",
    "mutation-rate": "rate",
    "connection-accept-rate": "rate",
    "throttle-time": "throttle_ms",
}


@dataclass(frozen=True)
class MetricKey:
    """One quota metric series: what it measures and for which entity (None = tag absent)."""

    kind: str
    column: str  # "rate" | "throttle_ms"
    user: str | None = None  # decoded (Sanitizer undone)
    client_id: str | None = None
    ip: str | None = None


def split_jmxtool_header(line: str) -> list[str] | None:
    """Split JmxTool's ``"time","<ObjectName>:<attr>",...`` header into its keys (``time`` first).

    JmxTool writes each key as ``"%s"`` without escaping (C.2), so a quoted ObjectName value
    breaks CSV rules; splitting on ``","`` is what Kafka's own system tests do.
    Returns None when the line is not such a header.
    """
    text = line.strip().lstrip("\ufeff")
    if not (text.startswith('"time"') and text.endswith('"')):
        return None
    return text[1:-1].split('","')


def _split_properties(props: str) -> list[str]:
    """Split ``k=v,k2="a,b"`` on commas outside quoted values (ObjectName.quote)."""
    parts, current, in_quotes, escaped = [], [], False, False
    for char in props:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\" and in_quotes:
            current.append(char)
            escaped = True
        elif char == '"':
            current.append(char)
            in_quotes = not in_quotes
        elif char == "," and not in_quotes:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


#: ObjectName.quote's escapes and what they stand for (javax.management.ObjectName.unquote)
_JMX_ESCAPES = {"\\": "\\", '"': '"', "*": "*", "?": "?", "n": "\n"}
#: characters ObjectName.unquote rejects when they are not escaped
_JMX_MUST_ESCAPE = frozenset('"*?\n')


def unquote_jmx(value: str) -> str:
    """Undo ``ObjectName.quote`` exactly as ``ObjectName.unquote`` does; other text is returned as is.

    Kafka's JmxReporter quotes a tag value holding characters outside ``[\\w-%. \\t]`` (a
    client-id such as ``etl:nightly`` becomes ``"etl:nightly"``). ``unquote`` accepts only the
    escapes ``\\\\ \\" \\* \\? \\n`` and rejects a bare ``" * ?`` or newline inside the quotes; a
    value it would reject was not written by ``quote``, so it is a real name and kept verbatim.
    """
    if len(value) < 2 or value[0] != '"' or value[-1] != '"':
        return value
    out, i, inner = [], 0, value[1:-1]
    while i < len(inner):
        char = inner[i]
        if char == "\\":
            if i + 1 >= len(inner) or inner[i + 1] not in _JMX_ESCAPES:
                return value  # trailing backslash or "Bad character after backslash"
            out.append(_JMX_ESCAPES[inner[i + 1]])
            i += 2
            continue
        if char in _JMX_MUST_ESCAPE:
            return value  # "Invalid unescaped character"
        out.append(char)
        i += 1
    return "".join(out)


def parse_object_name(object_name: str) -> tuple[str, dict[str, str]]:
    """``kafka.server:type=Produce,user=alice`` -> (``kafka.server``, {type: Produce, user: alice})."""
    domain, _, props = object_name.partition(":")
    tags: dict[str, str] = {}
    for prop in _split_properties(props):
        key, sep, value = prop.partition("=")
        if sep:
            tags[key.strip()] = unquote_jmx(value)
    return domain, tags


def parse_jmxtool_key(key: str) -> MetricKey | None:
    """Map a JmxTool column key to a quota metric, or None for columns we do not analyse.

    >>> parse_jmxtool_key("kafka.server:type=Produce,user=CN%3Dalice,client-id=app:byte-rate")
    MetricKey(kind='produce', column='rate', user='CN=alice', client_id='app', ip=None)
    """
    object_name, sep, attribute = key.rpartition(":")
    if not sep:
        return None
    domain, tags = parse_object_name(object_name)
    kind = GROUP_TO_KIND.get(tags.get("type", "").lower())
    column = ATTRIBUTE_TO_COLUMN.get(attribute)
    if domain != "kafka.server" or kind is None or column is None:
        return None
    return _metric_key(kind, column, tags.get("user"), tags.get("client-id"), tags.get("ip"))


def _metric_key(kind: str, column: str, user: str | None, client: str | None, ip: str | None) -> MetricKey | None:
    """Validate the tag set for the kind: connection rates are per ip; the rest per user/client."""
    if kind == "connection":
        # listener-level and broker-level connection metrics carry no ip: not a quota entity.
        return MetricKey(kind, column, ip=ip) if ip and column == "rate" else None
    if not user and not client:
        return None  # tag-less beans (queue-size, exempt-request-time) are not per entity
    return MetricKey(kind, column, desanitize(user) if user else None, client or None)


# --- Prometheus text exposition (jmx_exporter variants, C.3) -------------------------------------

#: ``name{labels} value [timestamp_ms]``; the name is optional for ``promtool tsdb dump`` lines.
PROM_LINE_RE = r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*(?:\{(.*)\})?\s+(\S+)(?:\s+(-?[0-9]+))?\s*$"
#: one label pair; values may hold escaped quotes.
PROM_LABEL_RE = r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"'
#: the three naming schemes, case-insensitive: group in the name (1, 3) or in ``resource`` (2).
PROM_QUOTA_NAME_RE = (
    r"(?i)^kafka_server_(?:quota_)?(?:(produce|fetch|request|controllermutation|controller_mutation)_)?"
    r"(byte_rate|throttle_time|request_time|mutation_rate)$"
)
PROM_CONNECTION_NAME_RE = r"(?i)^kafka_server_socket_server_metrics_connection_accept_rate$"
#: jmx_exporter's greedy ``type=(.+)`` can leave ``Produce, user=alice`` in ``resource`` (C.3).
PROM_RESOURCE_RE = r"^\s*([A-Za-z]+)\s*(?:,\s*user=(.*))?$"
PROM_CLIENT_LABELS = ("client_id", "clientId", "clientid", "client-id")
#: a tag value ObjectName.quote could have written (ObjectName.unquote accepts it): Java syntax
JMX_QUOTED_RE = r'^"(?:[^"\\*?\n]|\\[\\"*?n])*"$'
#: backslash escapes after the ``\\`` pairs are split off: Prometheus label values, JMX quoting
PROM_LABEL_ESCAPES = {'"': '"', "n": "\n"}
JMX_ESCAPES_AFTER_BACKSLASH = {'"': '"', "*": "*", "?": "?", "n": "\n"}


def parse_prometheus_sample(name: str, labels: dict[str, str]) -> MetricKey | None:
    """Python twin of the Spark expression in readers (used by tests and small inputs)."""
    if re.match(PROM_CONNECTION_NAME_RE, name):
        return _metric_key("connection", "rate", None, None, labels.get("ip"))
    match = re.match(PROM_QUOTA_NAME_RE, name)
    if not match:
        return None
    group, attribute = match.group(1), match.group(2).lower().replace("_", "-")
    user = labels.get("user")
    if group is None:
        resource = re.match(PROM_RESOURCE_RE, labels.get("resource", ""))
        group = resource.group(1) if resource else ""
        user = user or (resource.group(2) if resource else None)
    kind = GROUP_TO_KIND.get(group.lower())
    client = next((unquote_jmx(labels[k]) for k in PROM_CLIENT_LABELS if labels.get(k)), None)
    return _metric_key(kind, ATTRIBUTE_TO_COLUMN[attribute], user, client, None) if kind else None
