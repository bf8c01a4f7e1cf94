"""The gateway's version ceilings: clients may only negotiate versions it can handle safely. The
data plane (Rust) caps every ApiVersions response with these (``native_plane.version_ceilings``).

Rules (gateway spec section 7.1/7.3); docs/gateway.md has the table of caps and reasons:
1. Every API whose frames the gateway decodes is capped to the highest version both its codecs
   know: kafka-python's (the quota admin answers, the auth probe) and, applied by the data plane
   itself, the ``kafka-protocol`` crate's. A version it cannot decode would have to be forwarded
   blind, which for address-bearing responses leaks the brokers' real addresses. Against Kafka
   4.3 none of these caps is below the broker's. ApiVersions is decoded by the data plane alone,
   which also reads a v5 response (Kafka 4.4) as the v4 layout it is (``dataplane/rewrite.rs``).
2. Produce and Fetch are capped at the newest versions whose layout the data plane walks to find
   their KIP-951 NodeEndpoints (``dataplane/wire.rs``: Produce v13, Fetch v18, as in Kafka 4.3): a
   later version could move or add address-bearing fields.
3. DescribeQuorum is decoded from v2 (KIP-853), whose Nodes list every controller's listeners
   (host and port): no gateway listener leads to a controller, so the data plane sends each node
   with no listeners and the rest of the answer as the broker gave it; it is capped at the
   crate's maximum like every decoded API.
4. ShareFetch and ShareAcknowledge (KIP-932 share groups) carry NodeEndpoints in every version:
   the data plane decodes them up to v2 (the crate stops at v1; v2 responses are laid out from
   v1, ``dataplane/rewrite.rs``), rewrites the endpoints, and charges ShareFetch as a broker
   does, like Fetch. The other share-group APIs carry no broker address.
APIs the gateway never parses (e.g. ConsumerGroupHeartbeat, InitProducerId) are kept as the
broker offers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from kconfigs_enforcement.gateway import codec

PRODUCE, FETCH, METADATA, FIND_COORDINATOR = 0, 1, 3, 10
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, DESCRIBE_CLUSTER = 48, 49, 60

#: APIs whose requests or responses the gateway decodes (Produce requests: for producer ids; the
#: quota admin APIs: when the gateway answers them itself).
DECODED_APIS: frozenset[int] = frozenset(
    {
        PRODUCE,
        METADATA,
        FIND_COORDINATOR,
        SASL_HANDSHAKE,
        SASL_AUTHENTICATE,
        DESCRIBE_CLIENT_QUOTAS,
        ALTER_CLIENT_QUOTAS,
        DESCRIBE_CLUSTER,
    }
)
#: Kafka's ProduceResponse.json / FetchResponse.json as shipped in kafka-clients 4.3.1
PRODUCE_MAX_VERSION, FETCH_MAX_VERSION = 13, 18
#: Highest versions whose broker addresses the gateway knows where to find (or that have none).
ADDRESS_CAPS: Mapping[int, int] = MappingProxyType({PRODUCE: PRODUCE_MAX_VERSION, FETCH: FETCH_MAX_VERSION})


@dataclass(frozen=True)
class VersionRange:
    api_key: int
    min_version: int
    max_version: int


def allowed_max_version(api_key: int) -> int | None:
    """The gateway's own ceiling for ``api_key``; None = no ceiling; -1 = remove the API."""
    ceilings = [ADDRESS_CAPS[api_key]] if api_key in ADDRESS_CAPS else []
    if api_key in DECODED_APIS:
        decodable = codec.max_decodable_version(api_key)
        ceilings.append(-1 if decodable is None else decodable)
    return min(ceilings) if ceilings else None
