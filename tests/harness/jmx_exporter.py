"""Prometheus jmx_exporter from Maven Central (``.ci/kafka-jars/jmx-exporter``), and the JVM flags
that open a broker to it and to Kafka's JmxTool: the javaagent, and remote JMX on a local port."""

from __future__ import annotations

from pathlib import Path

from .processes import LOCALHOST
from .versions import REPO_ROOT, SETUP_HINT, MissingTestDependency, harness_cache_dir

LIST_FILE = REPO_ROOT / ".ci" / "kafka-jars" / "jmx-exporter"


#: the quota rules of prometheus/jmx_exporter example_configs/kafka-2_0_0.yml (the file's order:
#: client-id-only first, so user+client beans land in it with a greedy "resource")
EXAMPLE_KAFKA_QUOTA_RULES = """\
lowercaseOutputName: true
rules:
- pattern: kafka.server<type=(.+), client-id=(.+)><>([a-z-]+)
  name: kafka_server_quota_$3
  type: GAUGE
  labels:
    resource: "$1"
    clientId: "$2"
- pattern: kafka.server<type=(.+), user=(.+), client-id=(.+)><>([a-z-]+)
  name: kafka_server_quota_$4
  type: GAUGE
  labels:
    resource: "$1"
    user: "$2"
    clientId: "$3"
"""


def _versions() -> dict[str, str]:
    pairs = (line.split() for line in LIST_FILE.read_text().splitlines() if line.strip() and not line.startswith("#"))
    return {artifact: version for artifact, version in pairs}


def jmx_exporter_jar(artifact: str) -> Path:
    """The cached jar of ``artifact`` (e.g. ``jmx_prometheus_javaagent``). :raises MissingTestDependency:"""
    version = _versions()[artifact]
    jar = harness_cache_dir() / "jmx-exporter" / f"{artifact}-{version}.jar"
    if not jar.is_file():
        raise MissingTestDependency(f"{jar.name} is missing from {jar.parent}: {SETUP_HINT}")
    return jar


def remote_jmx_flags(port: int) -> tuple[str, ...]:
    """Unauthenticated JMX over RMI on 127.0.0.1:``port`` (registry and objects on one port)."""
    return (
        "-Dcom.sun.management.jmxremote",
        f"-Dcom.sun.management.jmxremote.port={port}",
        f"-Dcom.sun.management.jmxremote.rmi.port={port}",
        f"-Dcom.sun.management.jmxremote.host={LOCALHOST}",
        "-Dcom.sun.management.jmxremote.authenticate=false",
        "-Dcom.sun.management.jmxremote.ssl=false",
        f"-Djava.rmi.server.hostname={LOCALHOST}",
    )


def javaagent_flag(port: int, config: Path) -> str:
    """The jmx_exporter javaagent serving ``/metrics`` on 127.0.0.1:``port`` with ``config``."""
    return f"-javaagent:{jmx_exporter_jar('jmx_prometheus_javaagent')}={LOCALHOST}:{port}:{config}"


def jmx_url(port: int) -> str:
    return f"service:jmx:rmi:///jndi/rmi://{LOCALHOST}:{port}/jmxrmi"
