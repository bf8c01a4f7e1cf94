"""ApiVersions negotiation (pure): the highest version both sides support.

kconfigs encodes requests with kafka-python's protocol classes, so "our" range is the range
those classes were generated for (DescribeClientQuotas/AlterClientQuotas 0-1 in 3.0.12, the
same as Kafka's published schemas up to 4.x).
"""

from __future__ import annotations

from typing import Mapping

from kconfigs.errors import StoreUnavailable

DESCRIBE_CLIENT_QUOTAS = 48
ALTER_CLIENT_QUOTAS = 49
DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51
API_NAMES = {
    DESCRIBE_CLIENT_QUOTAS: "DescribeClientQuotas",
    ALTER_CLIENT_QUOTAS: "AlterClientQuotas",
    DESCRIBE_USER_SCRAM_CREDENTIALS: "DescribeUserScramCredentials",
    ALTER_USER_SCRAM_CREDENTIALS: "AlterUserScramCredentials",
}


def negotiate_version(api_key: int, ours: tuple[int, int], theirs: Mapping[int, tuple[int, int]]) -> int:
    """Highest version in both ``ours`` and the peer's advertised range for ``api_key``.

    :raises StoreUnavailable: the peer does not offer the API or the ranges do not overlap.
    """
    name = API_NAMES.get(api_key, f"API {api_key}")
    if api_key not in theirs:
        since = "2.7" if api_key in (DESCRIBE_USER_SCRAM_CREDENTIALS, ALTER_USER_SCRAM_CREDENTIALS) else "2.6"
        raise StoreUnavailable(f"The Kafka node does not support {name} (Kafka {since}+ brokers do)")
    their_min, their_max = theirs[api_key]
    our_min, our_max = ours
    version = min(our_max, their_max)
    if version < max(our_min, their_min):
        raise StoreUnavailable(
            f"No common {name} version: kconfigs supports {our_min}-{our_max}, the node {their_min}-{their_max}"
        )
    return version
