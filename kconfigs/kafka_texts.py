"""The kafka-configs texts that differ between Kafka lines, and how kconfigs picks the line (pure).

ZooKeeper mode (and the embedded store) always speaks kafka-configs 2.8.2, the last tool that
wrote quotas to ZooKeeper. ``--bootstrap-server``/``--bootstrap-controller`` speak the cluster's
own line, 3.x, 4.0-4.3 (Scala ConfigCommand) or 4.4+ (rewritten in Java), learnt from its
ApiVersions answer (see ``dialect_from_api_versions``) or given with ``--kafka-version``. Texts
were read off kafka-configs 2.8.2, 3.9.2, 4.3.1 and 4.4.0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum
from typing import Mapping

from kconfigs.errors import UsageError

FETCH = 1
# KIP-896: Kafka 4.0 removed Fetch v0-v3, on brokers and controllers alike (both listeners
# answer ApiVersions with Fetch, the controller for the Raft quorum). A 3.x node (checked on
# 3.9.2) advertises Fetch from v0, a 4.x node (checked on 4.3.1) from v4; nothing else that
# both listeners offer separates the two lines as simply.
FIRST_KAFKA_4_FETCH_MIN_VERSION = 4
API_VERSIONS = 18
# Kafka 4.4 added ApiVersions v5 (checked: 4.3.1 answers up to v4, 4.4.0 up to v5). ApiVersions
# is the one API every listener, broker or controller, answers, so its range marks the line.
FIRST_KAFKA_4_4_API_VERSIONS_MAX = 5


class Dialect(Enum):
    KAFKA_2_8 = "2.8"
    KAFKA_3 = "3.x"
    KAFKA_4 = "4.0-4.3"
    KAFKA_4_4 = "4.4+"


@dataclass(frozen=True)
class KafkaTexts:
    banner: str  # first line of --help
    entity_types: tuple[str, ...]  # in the order the "Invalid entity type" message lists them
    entity_types_joiner: str
    connect_phrase: str  # "with the --zookeeper argument"
    entity_name_required: str
    bad_add_config: str
    default_ip_is_an_ip: bool  # DynamicConfig.Ip.isValidIpEntity("<default>")
    line_options: frozenset[str]  # which of the options only some lines know (args.LINE_SPECIFIC_OPTIONS)
    config_key_pattern: str | None  # 3.7+ validatePropsKey (4.x also allows "$")
    java_tool: bool  # ConfigCommand in Java (4.4+): its collections' orders and printing
    two_servers: str  # both --bootstrap-server and --bootstrap-controller

    def invalid_entity_type(self, entity_type: str) -> str:
        return (
            f"Invalid entity type {entity_type}, the entity type must be one of "
            f"{self.entity_types_joiner.join(self.entity_types)} {self.connect_phrase}"
        )


_BANNER = "This tool helps to manipulate and describe entity config for a topic, client, user, broker"
_NAME_REQUIRED = "entity-name or default entity must be specified with --alter of users, clients, brokers or ips"
_FORMAT = 'Invalid entity config: all configs to be added must be in the format "key=val"'
_REQUIRE = "requirement failed: "  # Scala's require(); the Java tool throws the bare text
_FORMAT_4 = f'{_FORMAT} or  "key=[val1,val2]" to group values which contain commas.'
_BOOTSTRAP_PHRASE = "with a --bootstrap-server or --bootstrap-controller argument"
_TWO_SERVERS = "Only one of --bootstrap-server or --bootstrap-controller can be specified"
KEY_PATTERN_3 = r"[a-zA-Z0-9._-]*"
KEY_PATTERN_4 = r"[a-zA-Z0-9._$-]*"

TEXTS: dict[Dialect, KafkaTexts] = {
    Dialect.KAFKA_2_8: KafkaTexts(
        banner=f"{_BANNER} or ip",
        entity_types=("topics", "clients", "users", "brokers", "ips"),
        entity_types_joiner=",",
        connect_phrase="with the --zookeeper argument",
        entity_name_required=f"an {_NAME_REQUIRED}",
        bad_add_config=f"{_REQUIRE}{_FORMAT}.",
        default_ip_is_an_ip=True,
        line_options=frozenset({"force", "zk-tls-config-file"}),
        config_key_pattern=None,
        java_tool=False,
        two_servers=_TWO_SERVERS,  # not reached: --zookeeper decides the mode first
    ),
    Dialect.KAFKA_3: KafkaTexts(
        banner=f"{_BANNER}, ip or client-metrics",
        entity_types=("topics", "clients", "users", "brokers", "ips", "broker-loggers", "client-metrics"),
        entity_types_joiner=", ",
        connect_phrase=_BOOTSTRAP_PHRASE,
        entity_name_required=f"an {_NAME_REQUIRED}",
        bad_add_config=f"{_REQUIRE}{_FORMAT}.",
        default_ip_is_an_ip=True,
        line_options=frozenset({"force", "zk-tls-config-file"}),
        config_key_pattern=KEY_PATTERN_3,
        java_tool=False,
        two_servers="Only one of --bootstrap-server, --boostrap-controller, and --zookeeper can be specified",
    ),
    Dialect.KAFKA_4: KafkaTexts(
        banner=f"{_BANNER}, ip, client-metrics or group",
        entity_types=("topics", "clients", "users", "brokers", "ips", "client-metrics", "groups", "broker-loggers"),
        entity_types_joiner=", ",
        connect_phrase=_BOOTSTRAP_PHRASE,
        entity_name_required=f"An {_NAME_REQUIRED}",
        bad_add_config=f"{_REQUIRE}{_FORMAT_4}",
        default_ip_is_an_ip=False,
        line_options=frozenset({"group", "client-metrics"}),
        config_key_pattern=KEY_PATTERN_4,
        java_tool=False,
        two_servers=_TWO_SERVERS,
    ),
}
TEXTS[Dialect.KAFKA_4_4] = replace(
    TEXTS[Dialect.KAFKA_4],
    entity_types=("broker-loggers", "topics", "clients", "users", "brokers", "ips", "client-metrics", "groups"),
    bad_add_config=_FORMAT_4,
    java_tool=True,
)


def dialect_from_api_versions(api_versions: Mapping[int, tuple[int, int]]) -> Dialect:
    """The Kafka line of a node from its ApiVersions ranges (module constants for the rule)."""
    api_versions_range = api_versions.get(API_VERSIONS)
    if api_versions_range is not None and api_versions_range[1] >= FIRST_KAFKA_4_4_API_VERSIONS_MAX:
        return Dialect.KAFKA_4_4
    fetch = api_versions.get(FETCH)
    if fetch is not None and fetch[0] >= FIRST_KAFKA_4_FETCH_MIN_VERSION:
        return Dialect.KAFKA_4
    return Dialect.KAFKA_3


def dialect_from_option(version: str) -> Dialect:
    """``--kafka-version 3.9.2`` / ``4`` / ``4.1`` (``4`` alone: 4.0). :raises UsageError: anything else."""
    match = re.fullmatch(r"([0-9]+)(?:\.([0-9]+)(?:\.[0-9]+)?)?", version.strip())
    major = int(match.group(1)) if match else 0
    minor = int(match.group(2) or 0) if match else 0
    if major == 3:
        return Dialect.KAFKA_3
    if major == 4 and minor < 4:
        return Dialect.KAFKA_4
    if major >= 4:
        return Dialect.KAFKA_4_4
    raise UsageError(
        f"--kafka-version must be a Kafka 3.x or 4.x version (ZooKeeper mode always speaks "
        f"kafka-configs 2.8), not: {version}"
    )
