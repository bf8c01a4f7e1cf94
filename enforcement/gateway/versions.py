"""ApiVersions rewriting: clients may only negotiate versions the gateway can handle safely.

Rules (gateway spec section 7.1/7.3); docs/gateway.md has the table of caps and reasons:
1. Every API whose frames the gateway decodes is capped to kafka-python's maximum (a version it
   cannot decode would have to be forwarded blind, which for address-bearing responses leaks
   the brokers' real addresses). Against Kafka 4.3 none of these caps is below the broker's.
2. Produce and Fetch are capped at the newest versions whose layout the gateway walks to find
   their KIP-951 NodeEndpoints (:mod:`layout`: Produce v13, Fetch v18, as in Kafka 4.3): a later
   version could move or add address-bearing fields.
3. DescribeQuorum is capped at v1: v2 (KIP-853) lists every controller's listeners (host and
   port), which the gateway does not rewrite; v1 answers the same questions without them.
4. The Share* APIs of KIP-932 are removed: ShareFetch and ShareAcknowledge responses carry
   NodeEndpoints the gateway does not rewrite, and without them the rest of the family is useless
   (a share consumer then fails at once instead of part way).
APIs the gateway never parses (e.g. ConsumerGroupHeartbeat, InitProducerId) are kept as the
broker offers them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from kconfigs_enforcement.gateway import codec, layout

PRODUCE, FETCH, METADATA, FIND_COORDINATOR = 0, 1, 3, 10
SASL_HANDSHAKE, API_VERSIONS, SASL_AUTHENTICATE = 17, 18, 36
DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, DESCRIBE_QUORUM, DESCRIBE_CLUSTER = 48, 49, 55, 60

#: APIs whose requests or responses the gateway decodes with kafka-python (Produce requests: for
#: producer ids; the quota admin APIs: when the gateway answers them itself).
DECODED_APIS: frozenset[int] = frozenset(
    {
        PRODUCE,
        METADATA,
        FIND_COORDINATOR,
        SASL_HANDSHAKE,
        API_VERSIONS,
        SASL_AUTHENTICATE,
        DESCRIBE_CLIENT_QUOTAS,
        ALTER_CLIENT_QUOTAS,
        DESCRIBE_CLUSTER,
    }
)
#: Highest versions whose broker addresses the gateway knows where to find (or that have none).
ADDRESS_CAPS: Mapping[int, int] = MappingProxyType(
    {PRODUCE: layout.PRODUCE_MAX_VERSION, FETCH: layout.FETCH_MAX_VERSION, DESCRIBE_QUORUM: 1}
)
#: KIP-932 share-group APIs: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge
#: (the last two carry NodeEndpoints) and the share-group offset admin APIs.
REMOVED_APIS: frozenset[int] = frozenset({76, 77, 78, 79, 90, 91, 92})


@dataclass(frozen=True)
class VersionRange:
    api_key: int
    min_version: int
    max_version: int


@functools.cache  # pure, and asked for every request
def allowed_max_version(api_key: int) -> int | None:
    """The gateway's own ceiling for ``api_key``; None = no ceiling; -1 = remove the API."""
    if api_key in REMOVED_APIS:
        return -1
    ceilings = [ADDRESS_CAPS[api_key]] if api_key in ADDRESS_CAPS else []
    if api_key in DECODED_APIS:
        decodable = codec.max_decodable_version(api_key)
        ceilings.append(-1 if decodable is None else decodable)
    return min(ceilings) if ceilings else None


def cap_range(entry: VersionRange) -> VersionRange | None:
    """Intersect one broker range with the gateway's; None when nothing usable remains."""
    ceiling = allowed_max_version(entry.api_key)
    if ceiling is None:
        return entry
    capped = min(entry.max_version, ceiling)
    if capped < entry.min_version:
        return None
    return VersionRange(entry.api_key, entry.min_version, capped)


def cap_ranges(entries: list[VersionRange], gateway_owned: Mapping[int, VersionRange]) -> list[VersionRange]:
    """Cap every broker range; then add/replace the APIs the gateway answers itself
    (``gateway_owned``, e.g. DescribeClientQuotas on a tansu upstream), sorted by api key."""
    result = {e.api_key: e for e in (cap_range(x) for x in entries) if e is not None}
    result.update(gateway_owned)
    return [result[k] for k in sorted(result)]


def rewrite_api_versions_response(
    frame: bytes,
    version: int,
    gateway_owned: "Mapping[int, VersionRange] | Callable[[set[int]], Mapping[int, VersionRange]]",
) -> bytes:
    """Decode an ApiVersions response, cap its api_keys, re-encode (header v0 always).

    ``gateway_owned``: the APIs the gateway answers itself, or a function of the upstream's API
    keys returning them. An error response (decoded as v0 by kafka-python) is capped the same way.
    :raises ValueError and kafka-python decode errors on malformed bytes:
    """
    response = codec.decode_response(API_VERSIONS, version, frame)
    ranges = [VersionRange(k.api_key, k.min_version, k.max_version) for k in response.api_keys]
    owned = gateway_owned({r.api_key for r in ranges}) if callable(gateway_owned) else gateway_owned
    capped = cap_ranges(ranges, owned if response.error_code == 0 else {})
    entry_cls = type(response.api_keys[0]) if response.api_keys else _api_version_entry_class()
    response.api_keys = [
        entry_cls(api_key=r.api_key, min_version=r.min_version, max_version=r.max_version) for r in capped
    ]
    return codec.encode_message(response)


def _api_version_entry_class() -> type:
    return codec.response_class(API_VERSIONS).ApiVersion


def unsupported_version_response(correlation_id: int) -> bytes:
    """What a broker answers to an ApiVersions request above its maximum: a v0 response with
    UNSUPPORTED_VERSION (35) listing the ApiVersions range, so the client retries lower."""
    top = codec.max_decodable_version(API_VERSIONS)
    entry = _api_version_entry_class()(api_key=API_VERSIONS, min_version=0, max_version=top)
    return codec.build_response(API_VERSIONS, 0, correlation_id, error_code=35, api_keys=[entry])
