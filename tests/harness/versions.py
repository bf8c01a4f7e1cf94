"""Kafka versions and on-disk locations shared by the harness and .ci/setup-test-env.

The single source of the version numbers is ``.ci/kafka-jars/versions`` (also read by the
setup script), so that the jars fetched by CI and the versions the fixtures run never drift.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSIONS_FILE = REPO_ROOT / ".ci" / "kafka-jars" / "versions"

#: Appended to every "something is not installed" failure.
SETUP_HINT = "run .ci/setup-test-env"


class MissingTestDependency(RuntimeError):
    """A binary, jar or package the integration tests need is not installed.

    Fixtures let this propagate so that the test FAILS (it is never skipped): CI installs
    everything through ``.ci/setup-test-env``, so a missing piece is a setup bug.
    """


def _read_versions(path: Path) -> dict[str, str]:
    """Parse ``NAME=VERSION PROFILES`` lines; comments and blank lines are ignored."""
    versions: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition("=")
        versions[name] = rest.split()[0]
    return versions


_VERSIONS = _read_versions(VERSIONS_FILE)

#: Last Kafka whose ``kafka.admin.ConfigCommand --zookeeper`` writes quotas to ZooKeeper.
KAFKA_ZK_TOOL_VERSION: str = _VERSIONS["KAFKA_ZK_TOOL_VERSION"]
#: Newest 3.9.x: broker in ZooKeeper mode and in KRaft mode.
KAFKA_3_VERSION: str = _VERSIONS["KAFKA_3_VERSION"]
#: The suite's 4.x broker (KRaft only), whose kafka-configs is still Scala.
KAFKA_4_VERSION: str = _VERSIONS["KAFKA_4_VERSION"]
#: Newest resolvable 4.x, whose kafka-configs is rewritten in Java: KRaft only.
KAFKA_4_JAVA_TOOL_VERSION: str = _VERSIONS["KAFKA_4_JAVA_TOOL_VERSION"]
ALL_KAFKA_VERSIONS: tuple[str, ...] = (
    KAFKA_ZK_TOOL_VERSION,
    KAFKA_3_VERSION,
    KAFKA_4_VERSION,
    KAFKA_4_JAVA_TOOL_VERSION,
)
#: Every kafka-configs line kconfigs imitates over --bootstrap-server: 3.x, 4.x in Scala, 4.x in Java.
BOOTSTRAP_TOOL_VERSIONS: tuple[str, ...] = (KAFKA_3_VERSION, KAFKA_4_VERSION, KAFKA_4_JAVA_TOOL_VERSION)


def harness_cache_dir() -> Path:
    """Directory holding the Kafka jars (``kafka-<version>/``) and JVM class-data archives."""
    default = Path.home() / ".cache" / "kconfigs-test"
    return Path(os.environ.get("KCONFIGS_TEST_CACHE", default))
