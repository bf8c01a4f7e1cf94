"""Integration-test harness: real ZooKeeper, Kafka (2.8 tools, 3.9 ZK/KRaft, 4.x KRaft) and Tansu.

Fixtures (registered by tests/conftest.py; see harness.fixtures): ``zk_server``,
``zk_connect``, ``zk_client``, ``kafka_zk_broker``, ``kraft_broker_factory``, ``kraft_broker``,
``kraft_broker_3``, ``tansu_broker``, ``zk_tls_server``.

Helpers for tests::

    from harness import run_kafka_class, config_command_class, KAFKA_ZK_TOOL_VERSION
    result = run_kafka_class(KAFKA_ZK_TOOL_VERSION, "kafka.admin.ConfigCommand",
                             ["--zookeeper", zk_connect, "--describe", "--entity-type", "users"])
"""

from .java import (
    config_command_class,
    has_kafka_class,
    java_command,
    kafka_classpath,
    kafka_jars,
    run_kafka_class,
    storage_tool_class,
)
from .processes import ServerProcess, ServerStartError, free_port, free_ports, port_is_open
from .versions import (
    ALL_KAFKA_VERSIONS,
    KAFKA_3_VERSION,
    KAFKA_4_VERSION,
    KAFKA_ZK_TOOL_VERSION,
    SETUP_HINT,
    MissingTestDependency,
)

__all__ = [
    "ALL_KAFKA_VERSIONS",
    "KAFKA_3_VERSION",
    "KAFKA_4_VERSION",
    "KAFKA_ZK_TOOL_VERSION",
    "SETUP_HINT",
    "MissingTestDependency",
    "ServerProcess",
    "ServerStartError",
    "config_command_class",
    "free_port",
    "free_ports",
    "has_kafka_class",
    "java_command",
    "kafka_classpath",
    "kafka_jars",
    "port_is_open",
    "run_kafka_class",
    "storage_tool_class",
]
