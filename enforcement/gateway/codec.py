"""kafka-python's protocol classes as the gateway's codec for the control messages it decodes.

Used by the control plane: the client quota admin APIs it answers, the auth probe's Metadata
request, the version ceilings (:mod:`versions`) and which responses start with
``throttle_time_ms`` (handed to the data plane). Pinned to kafka-python 3.0.x: versions above a
class's ``max_version`` cannot be decoded, which is why :mod:`versions` caps the APIs the gateway
decodes. Known quirk worked around here:
``encode(version=...)`` fails on a decoded response, so objects are always encoded without one.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from kafka.protocol.schemas import BaseField

from kconfigs_enforcement.gateway.headers import MalformedFrame


@functools.cache
def _message_classes() -> dict[tuple[int, str], type]:
    """(api_key, "request"|"response") -> kafka-python ApiMessage class, for every known API."""
    from kafka.protocol import admin, consumer, metadata, producer, sasl
    from kafka.protocol.api_message import ApiMessage

    table: dict[tuple[int, str], type] = {}
    for module in (admin, consumer, metadata, producer, sasl):
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, ApiMessage) and cls is not ApiMessage and getattr(cls, "_json", None):
                table[(cls.API_KEY, cls.type)] = cls
    return table


def response_class(api_key: int) -> type | None:
    return _message_classes().get((api_key, "response"))


def request_class(api_key: int) -> type | None:
    return _message_classes().get((api_key, "request"))


def max_decodable_version(api_key: int) -> int | None:
    """Highest version kafka-python can decode for both directions of ``api_key`` (None: unknown)."""
    req, resp = request_class(api_key), response_class(api_key)
    if req is None or resp is None:
        return None
    return min(req.max_version, resp.max_version)


#: Response versions that start with ``throttle_time_ms`` where kafka-python 3.0 has no schema
#: (a newer api key or version), as Kafka 4.4.0's generated message classes lay them out: api key
#: -> versions. Without them a throttled client of these APIs (a KIP-848 consumer's heartbeat, a
#: share consumer, Kafka Streams' group protocol) would be muted without being told why. A version
#: not listed is left unpatched until checked: an integration test compares this with the jar.
THROTTLE_FIRST_BEYOND_KAFKA_PYTHON: dict[int, range] = {
    28: range(6, 7),  # TxnOffsetCommit
    42: range(3, 4),  # DeleteGroups
    56: range(2, 4),  # AlterPartition
    59: range(0, 2),  # FetchSnapshot
    62: range(0, 5),  # BrokerRegistration
    63: range(0, 3),  # BrokerHeartbeat
    64: range(0, 1),  # UnregisterBroker
    67: range(0, 1),  # AllocateProducerIds
    68: range(0, 2),  # ConsumerGroupHeartbeat
    69: range(0, 2),  # ConsumerGroupDescribe
    70: range(0, 1),  # ControllerRegistration
    71: range(0, 1),  # GetTelemetrySubscriptions
    72: range(0, 1),  # PushTelemetry
    73: range(0, 1),  # AssignReplicasToDirs
    76: range(1, 2),  # ShareGroupHeartbeat
    77: range(1, 2),  # ShareGroupDescribe
    78: range(1, 3),  # ShareFetch
    79: range(1, 3),  # ShareAcknowledge
    80: range(0, 2),  # AddRaftVoter
    81: range(0, 1),  # RemoveRaftVoter
    82: range(0, 1),  # UpdateRaftVoter
    88: range(0, 2),  # StreamsGroupHeartbeat
    89: range(0, 2),  # StreamsGroupDescribe
    90: range(0, 2),  # DescribeShareGroupOffsets
    91: range(0, 1),  # AlterShareGroupOffsets
    92: range(0, 1),  # DeleteShareGroupOffsets
    93: range(0, 1),  # StreamsGroupTopologyDescriptionUpdate
    94: range(0, 1),  # UnregisterController
}


@functools.cache
def throttle_time_is_first_field(api_key: int, version: int) -> bool:
    """True when ``throttle_time_ms`` is the first body field of this response version.

    That holds for most APIs (Fetch v1+, Metadata v3+, FindCoordinator v1+ ...), so the throttle
    can be patched at a fixed offset without decoding. Produce keeps it after ``responses``.
    """
    if version in THROTTLE_FIRST_BEYOND_KAFKA_PYTHON.get(api_key, ()):
        return True
    cls = response_class(api_key)
    if cls is None or version > cls.max_version:
        return False
    first = cls.json["fields"][0]
    if first["name"] != "ThrottleTimeMs":
        return False
    low, high = BaseField.parse_versions(first["versions"])
    return low <= version <= high


def decode_request(api_key: int, version: int, frame: bytes | memoryview) -> Any:
    """Decode a whole request frame (header + body, no length prefix). :raises ValueError:"""
    cls = request_class(api_key)
    if cls is None:
        raise ValueError(f"no codec for api key {api_key}")
    return _decode(cls, version, frame, "request")


def _decode(cls: Any, version: int, frame: bytes | memoryview, side: str) -> Any:
    """kafka-python raises struct.error, UnicodeDecodeError, IndexError, ValueError ... on hostile
    bytes (found by fuzzing): all become one MalformedFrame, which closes only that connection.
    The message names the API and the error type, never the bytes (they may hold credentials)."""
    try:
        return cls[version].decode(bytes(frame), header=True)
    except Exception as err:
        raise MalformedFrame(
            f"cannot decode {cls.__name__.removesuffix('Request').removesuffix('Response')} "
            f"{side} v{version}: {type(err).__name__}"
        ) from None


def encode_message(message: Any) -> bytes:
    """Re-encode a decoded (or built, with ``with_header``) message: header + body, no prefix."""
    return bytes(message.encode(header=True))


def build_response(api_key: int, version: int, correlation_id: int, **fields: Any) -> bytes:
    """Build and encode a response the gateway answers itself (header + body, no prefix)."""
    message = response_class(api_key)[version](**fields)
    message.with_header(correlation_id=correlation_id)
    return encode_message(message)
