"""``bootstrap.servers`` checked as the Java admin client checks it before connecting (pure).

``ClientUtils.parseAndValidateAddresses`` (Kafka 2.8-4.x): the list is split on commas (with
surrounding whitespace), empty entries skipped; each entry must match Kafka's
``HOST_PORT_PATTERN``; an out-of-range port fails; an unresolvable host is only skipped, and the
command fails when no entry is left. kafka-configs reports these at once (wrapped in "Failed to
create new KafkaAdminClient"); kconfigs prints the ConfigException's text.
"""

from __future__ import annotations

import re
from typing import Callable

from kconfigs.errors import UsageError

# org.apache.kafka.common.utils.Utils.HOST_PORT_PATTERN (matched with Matcher.matches()) as of 4.x.
# 2.8.2 and 3.9.2 use ".*?\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)", which lets anything precede the
# host ("bad host:1" means host:1); kconfigs keeps the stricter form for every line.
_HOST_PORT = re.compile(r"(?:[0-9a-zA-Z\-%._]*://)?\[?([0-9a-zA-Z\-%._:]*)]?:([0-9]+)")
_COMMA = re.compile(r"\s*,\s*")  # ConfigDef LIST: COMMA_WITH_WHITESPACE after trim()


def bootstrap_addresses(servers: str, resolves: Callable[[str], bool]) -> list[tuple[str, int]]:
    """(host, port) per usable entry of ``servers``; ``resolves(host)`` says whether DNS knows it.

    :raises UsageError: ``You must set either bootstrap.servers or bootstrap.controllers`` (nothing
        given, 3.7+ AdminBootstrapAddresses), ``Invalid url in bootstrap.servers: x``, ``Invalid
        port in bootstrap.servers: x`` or ``No resolvable bootstrap urls given in bootstrap.servers``.
    """
    trimmed = servers.strip()
    if not trimmed:
        raise UsageError("You must set either bootstrap.servers or bootstrap.controllers")
    addresses = []
    for url in _COMMA.split(trimmed) if trimmed else []:
        if not url:
            continue
        match = _HOST_PORT.fullmatch(url)
        if match is None:
            raise UsageError(f"Invalid url in bootstrap.servers: {url}")
        host, port = match.group(1), int(match.group(2))
        if port > 65535:
            raise UsageError(f"Invalid port in bootstrap.servers: {url}")
        if resolves(host):
            addresses.append((host, port))
    if not addresses:
        raise UsageError("No resolvable bootstrap urls given in bootstrap.servers")
    return addresses
