"""Kafka's ``org.apache.kafka.common.utils.Sanitizer`` and the ``<default>`` entity name.

Pure functions, no I/O. User and client-id names become znode path components exactly as Kafka
writes them, so a tree written by kconfigs reads back in kafka-configs and in brokers.
"""

from __future__ import annotations

from urllib.parse import quote, unquote_plus

DEFAULT_NAME = "<default>"  # ConfigEntityName.Default

# java.net.URLEncoder keeps exactly these unreserved characters; everything else is
# percent-encoded from UTF-8, space becomes '+'. Kafka then maps '*' -> %2A and '+' -> %20.
_URLENCODER_SAFE = "-._*"


def sanitize(name: str) -> str:
    """Return Kafka's sanitized form of a user principal or client-id (for znode paths).

    >>> sanitize("CN=user1"), sanitize("a b"), sanitize("a*b")
    ('CN%3Duser1', 'a%20b', 'a%2Ab')
    """
    # quote() encodes ' ' as %20 (Kafka's final form) but, unlike URLEncoder, keeps '~'.
    encoded = quote(name, safe=_URLENCODER_SAFE)
    return encoded.replace("~", "%7E").replace("*", "%2A")


def desanitize(name: str) -> str:
    """Inverse of :func:`sanitize`; like ``URLDecoder.decode`` a literal ``+`` decodes to a space."""
    return unquote_plus(name)
