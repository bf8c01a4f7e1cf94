"""Which strings are valid ip entity names (Kafka ``DynamicConfig.Ip.isValidIpEntity``).

Kafka accepts anything ``InetAddress.getByName`` accepts, which includes DNS names, so its answer
depends on the resolver. kconfigs accepts the literal forms Java accepts (checked on JDK 17:
``1`` -> 0.0.0.1, ``1.2.3`` -> 1.2.0.3, ``01.2.3.4`` -> 1.2.3.4, ``[::1]``) and resolves host
names only when asked to. Pure except for the opt-in resolver passed by the caller.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Callable

from kconfigs.sanitize import DEFAULT_NAME

# Part count -> maximum of the last part: Java's textToNumericFormatV4 lets the last part fill
# the remaining bytes (1.65536 -> 1.1.0.0).
_LAST_PART_MAX = {1: 2**32 - 1, 2: 2**24 - 1, 3: 2**16 - 1, 4: 255}


def java_ipv4_address(text: str) -> ipaddress.IPv4Address | None:
    """The address of a literal in one of the IPv4 forms Java accepts, else None."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(p.isdigit() and p.isascii() for p in parts):
        return None
    *head, last = (int(p) for p in parts)
    if any(p > 255 for p in head) or last > _LAST_PART_MAX[len(parts)]:
        return None
    value = 0
    for part in head:
        value = (value << 8) | part
    return ipaddress.IPv4Address((value << (8 * (5 - len(parts)))) | last)  # the last part fills the rest


def is_java_ipv4_literal(text: str) -> bool:
    return java_ipv4_address(text) is not None


def ipv6_address(text: str) -> ipaddress.IPv6Address | None:
    """The address of an IPv6 literal (brackets allowed), else None."""
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if "%" in inner:  # scoped literals depend on the host's interfaces: refuse, as for DNS
        return None
    try:
        address = ipaddress.ip_address(inner)
    except ValueError:
        return None
    return address if isinstance(address, ipaddress.IPv6Address) else None


def is_ipv6_literal(text: str) -> bool:
    return ipv6_address(text) is not None


def is_valid_ip_entity(name: str, resolve: Callable[[str], bool] | None = None) -> bool:
    """True for ``<default>``, Java-accepted IP literals, and (only if ``resolve`` is given)
    host names it can resolve."""
    if name == DEFAULT_NAME or is_java_ipv4_literal(name) or is_ipv6_literal(name):
        return True
    return bool(resolve and name and resolve(name))


@functools.lru_cache(maxsize=4096)
def address_key(name: str) -> str:
    """One string per address for an ip entity name or a client's address. Kafka keys ip quotas by
    ``InetAddress.getByName(name)``, so ``127.1``, ``127.0.0.1`` and ``::ffff:127.0.0.1`` (Java
    turns an IPv4-mapped IPv6 literal into the IPv4 address) are one ip, and so are ``[::1]`` and
    ``0:0:0:0:0:0:0:1``. A name that is no IP literal (a host name) is its own key: a broker
    would resolve it, which depends on the resolver."""
    ipv4 = java_ipv4_address(name)
    if ipv4 is not None:
        return str(ipv4)
    ipv6 = ipv6_address(name)
    if ipv6 is not None:
        return str(ipv6.ipv4_mapped or ipv6)
    return name
