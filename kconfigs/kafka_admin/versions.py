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
API_NAMES = {DESCRIBE_CLIENT_QUOTAS: "DescribeClientQuotas", ALTER_CLIENT_QUOTAS: "AlterClientQuotas"}


def negotiate_version(api_key: int, ours: tuple[int, int], theirs: Mapping[int, tuple[int, int]]) -> int:
    """Highest version in both ``ours`` and the peer's advertised range for ``api_key``.

    :raises StoreUnavailable: the peer does not offer the API or the ranges do not overlap.
    """
    name = API_NAMES.get(api_key, f"API {api_key}")
    if api_key not in theirs:
        raise StoreUnavailable(f"The Kafka node does not support {name} (Kafka 2.6+ brokers do)")
    their_min, their_max = theirs[api_key]
    our_min, our_max = ours
    version = min(our_max, their_max)
    if version < max(our_min, their_min):
        raise StoreUnavailable(
            f"No common {name} version: kconfigs supports {our_min}-{our_max}, the node {their_min}-{their_max}"
        )
    return version
