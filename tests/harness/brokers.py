"""Real Apache Kafka brokers (ZooKeeper mode and KRaft combined mode) on free 127.0.0.1 ports."""

from __future__ import annotations

import base64
import time
import uuid
from pathlib import Path

from .java import java_command, run_kafka_class, storage_tool_class
from .processes import LOCALHOST, RestartableServer, ServerProcess, ServerStartError, free_ports, port_is_open

KAFKA_MAIN = "kafka.Kafka"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
ADMIN_USER = "admin"
ADMIN_PASSWORD = "admin-secret"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
#: node.id of the single-node KRaft broker+controller (also its broker-loggers resource name)
KRAFT_NODE_ID = 1

#: Single-broker settings: internal topics with replication factor 1 and one partition (a
#: 50-partition __consumer_offsets costs seconds on 2 cores), two network/io threads, no
#: rebalance delay. Quota settings (quota.window.*) are deliberately left at Kafka's defaults.
SINGLE_BROKER_PROPS = {
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
    "delete.topic.enable": "true",
}


def _properties_text(props: dict[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in props.items())


def metadata_ready(bootstrap: str, **client_config) -> bool:
    """True once a kafka-python admin client gets cluster metadata listing a broker."""
    from kafka import KafkaAdminClient

    host, _, port = bootstrap.rpartition(":")
    if not port_is_open(int(port), host):  # cheap pre-check: no client, no backoff, no log noise
        return False
    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap,
        request_timeout_ms=5000,
        bootstrap_timeout_ms=5000,
        reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=250,
        **client_config,
    )
    try:
        return bool(admin.describe_cluster().get("brokers"))
    finally:
        admin.close()


class KafkaBroker(RestartableServer):
    """Common life cycle of a one-node Kafka: properties file, process, readiness.

    Attributes: ``version``, ``bootstrap`` ("127.0.0.1:PORT", PLAINTEXT), ``log_path``,
    ``startup_s`` (seconds the last start took until metadata requests succeeded).
    """

    mode = "?"

    def __init__(
        self,
        version: str,
        workdir: Path,
        extra_props: dict[str, str] | None = None,
        extra_jvm_flags: tuple[str, ...] = (),
    ) -> None:
        self.version = version
        self.workdir = Path(workdir)
        self.extra_props = dict(extra_props or {})
        #: e.g. a ``-javaagent:`` or remote-JMX system properties (metric-dump capture tests)
        self.extra_jvm_flags = tuple(extra_jvm_flags)
        self.log_dir = self.workdir / "data"
        self.config_path = self.workdir / "server.properties"
        self.log_path = self.workdir / "server.log"
        self.port = 0
        self.startup_s = 0.0
        self._process: ServerProcess | None = None

    @property
    def name(self) -> str:
        return f"kafka {self.version} ({self.mode})"

    @property
    def bootstrap(self) -> str:
        return f"{LOCALHOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The broker JVM's process id while it runs."""
        return self._process.pid if self._process else None

    def mode_props(self) -> dict[str, str]:
        raise NotImplementedError

    def server_props(self) -> dict[str, str]:
        """Full server.properties: common, mode-specific, then the caller's extra_props."""
        return {"log.dirs": str(self.log_dir), **SINGLE_BROKER_PROPS, **self.mode_props(), **self.extra_props}

    def prepare_storage(self) -> None:
        """Hook run before the first start (KRaft formats its log dir)."""

    def _launch(self) -> None:
        launched = time.monotonic()  # start-up time includes formatting the storage
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(_properties_text(self.server_props()))
        self.prepare_storage()
        argv = java_command(
            self.version, KAFKA_MAIN, [str(self.config_path)], role="server", extra_jvm_flags=self.extra_jvm_flags
        )
        self._process = ServerProcess(self.name, argv, self.log_path)
        self._process.start()
        try:
            self._process.wait_until(self.ready, "answering metadata requests")
        except Exception:
            self._process.kill()
            raise
        self.startup_s = time.monotonic() - launched

    def ready(self) -> bool:
        return metadata_ready(self.bootstrap)


#: A killed broker's /brokers/ids/<id> znode lives until its ZooKeeper session expires; a
#: short session lets a kill + start fault test re-register within seconds.
ZK_SESSION_TIMEOUT_MS = 6000


class ZkModeBroker(KafkaBroker):
    """A broker in ZooKeeper mode (Kafka < 4.0) on a chroot of a running ZooKeeper.

    Extra attribute: ``zk_connect`` ("127.0.0.1:PORT/chroot"; Kafka creates the chroot).
    """

    mode = "zk"

    def __init__(self, version: str, workdir: Path, zk_connect: str, extra_props: dict[str, str] | None = None) -> None:
        super().__init__(version, workdir, extra_props)
        self.zk_connect = zk_connect

    def mode_props(self) -> dict[str, str]:
        return {
            "broker.id": "0",
            "listeners": f"PLAINTEXT://{self.bootstrap}",
            "advertised.listeners": f"PLAINTEXT://{self.bootstrap}",
            "zookeeper.connect": self.zk_connect,
            "zookeeper.session.timeout.ms": str(ZK_SESSION_TIMEOUT_MS),
        }

    def _launch(self) -> None:
        """Start; after a kill, retry while ZooKeeper still holds the old registration."""
        deadline = time.monotonic() + 3 * ZK_SESSION_TIMEOUT_MS / 1000
        while True:
            try:
                return super()._launch()
            except ServerStartError as error:
                if "NodeExistsException" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(1)


def random_cluster_id() -> str:
    """A Kafka cluster id (22-char URL-safe base64 UUID), never starting with "-"
    (argparse in kafka-storage would read that as an option)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


class KraftBroker(KafkaBroker):
    """Combined broker+controller (``process.roles=broker,controller``), storage formatted once.

    Extra attributes: ``controller_bootstrap`` ("127.0.0.1:PORT" of the CONTROLLER listener),
    ``sasl_bootstrap`` (SASL_PLAINTEXT with SCRAM-SHA-256/512, or None), ``cluster_id``,
    ``admin_user``/``admin_password`` (a SCRAM super user created at format time).
    """

    mode = "kraft"

    def __init__(
        self,
        version: str,
        workdir: Path,
        sasl_scram: bool = False,
        extra_props: dict[str, str] | None = None,
        extra_jvm_flags: tuple[str, ...] = (),
    ) -> None:
        super().__init__(version, workdir, extra_props, extra_jvm_flags)
        self.sasl_scram = sasl_scram
        self.controller_port = 0
        self.sasl_port = 0
        self.cluster_id = random_cluster_id()
        self.admin_user = ADMIN_USER
        self.admin_password = ADMIN_PASSWORD
        self._formatted = False

    @property
    def name(self) -> str:
        return f"kafka {self.version} (kraft{', sasl' if self.sasl_scram else ''})"

    @property
    def controller_bootstrap(self) -> str:
        return f"{LOCALHOST}:{self.controller_port}"

    @property
    def sasl_bootstrap(self) -> str | None:
        return f"{LOCALHOST}:{self.sasl_port}" if self.sasl_scram else None

    def choose_ports(self) -> None:
        self.port, self.controller_port, self.sasl_port = free_ports(3)

    def sasl_client_config(self, mechanism: str = "SCRAM-SHA-256") -> dict[str, str]:
        """kafka-python keyword arguments for logging in as the admin super user."""
        return {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": self.admin_user,
            "sasl_plain_password": self.admin_password,
        }

    def _listener_props(self) -> dict[str, str]:
        listeners = [f"PLAINTEXT://{self.bootstrap}", f"CONTROLLER://{self.controller_bootstrap}"]
        advertised = [f"PLAINTEXT://{self.bootstrap}"]
        protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
        if self.sasl_scram:
            listeners.append(f"SASL_PLAINTEXT://{self.sasl_bootstrap}")
            advertised.append(f"SASL_PLAINTEXT://{self.sasl_bootstrap}")
            protocols.append("SASL_PLAINTEXT:SASL_PLAINTEXT")
        return {
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "listener.security.protocol.map": ",".join(protocols),
        }

    def _sasl_props(self) -> dict[str, str]:
        if not self.sasl_scram:
            return {}
        props = {"sasl.enabled.mechanisms": ",".join(SCRAM_MECHANISMS), "super.users": f"User:{self.admin_user}"}
        for mechanism in SCRAM_MECHANISMS:
            props[f"listener.name.sasl_plaintext.{mechanism.lower()}.sasl.jaas.config"] = SCRAM_LOGIN_MODULE
        return props

    def mode_props(self) -> dict[str, str]:
        return {
            "process.roles": "broker,controller",
            "node.id": str(KRAFT_NODE_ID),
            "controller.quorum.voters": f"{KRAFT_NODE_ID}@{self.controller_bootstrap}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            **self._listener_props(),
            **self._sasl_props(),
            # 4.x share-group state topic defaults to RF 3; unknown to 3.9 (only a warning).
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
        }

    def _format_args(self) -> list[str]:
        args = ["format", "-t", self.cluster_id, "-c", str(self.config_path)]
        if self.sasl_scram:
            for mechanism in SCRAM_MECHANISMS:
                args += ["--add-scram", f"{mechanism}=[name={self.admin_user},password={self.admin_password}]"]
        return args

    def prepare_storage(self) -> None:
        """kafka-storage format (once): cluster id, and the SCRAM admin user if enabled."""
        if self._formatted:
            return
        result = run_kafka_class(self.version, storage_tool_class(self.version), self._format_args())
        if result.returncode != 0:
            raise ServerStartError(
                f"{self.name}: kafka-storage format failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
            )
        self._formatted = True

    def ready(self) -> bool:
        if not metadata_ready(self.bootstrap):
            return False
        return not self.sasl_scram or metadata_ready(self.sasl_bootstrap, **self.sasl_client_config())
