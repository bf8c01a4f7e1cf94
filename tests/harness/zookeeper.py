"""A real standalone ZooKeeper (Debian ``zookeeper`` package) on free 127.0.0.1 ports."""

from __future__ import annotations

import socket
from contextlib import contextmanager
from pathlib import Path

from .java import SERVER_JVM_FLAGS, java_binary
from .processes import LOCALHOST, RestartableServer, ServerProcess
from .versions import SETUP_HINT, MissingTestDependency

ZOOKEEPER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
#: Debian's zookeeper.jar names its dependencies in its manifest Class-Path; slf4j-simple is
#: the binding shipped by libslf4j-java (a dependency of the package), logging to stderr.
DEBIAN_JAR_DIRS = (Path("/usr/share/java"), Path("/usr/share/zookeeper"))
ZOOKEEPER_JAR = "zookeeper.jar"
SLF4J_BINDING_JAR = "slf4j-simple.jar"
#: Netty modules the manifest forgets; NettyServerCnxnFactory (needed for TLS) loads them.
NETTY_EXTRA_JARS = ("netty-codec.jar", "netty-resolver.jar", "netty-transport-native-unix-common.jar")


def zookeeper_classpath() -> str:
    """Classpath of the Debian ZooKeeper server.

    :raises MissingTestDependency: the zookeeper package is not installed.
    """
    for jar_dir in DEBIAN_JAR_DIRS:
        server_jar = jar_dir / ZOOKEEPER_JAR
        binding = jar_dir / SLF4J_BINDING_JAR
        if server_jar.is_file() and binding.is_file():
            extras = [jar_dir / name for name in NETTY_EXTRA_JARS if (jar_dir / name).is_file()]
            return ":".join(str(jar) for jar in (server_jar, binding, *extras))
    raise MissingTestDependency(
        f"ZooKeeper jars ({ZOOKEEPER_JAR}, {SLF4J_BINDING_JAR}) not found in "
        f"{', '.join(map(str, DEBIAN_JAR_DIRS))}: {SETUP_HINT}"
    )


def four_letter_word(port: int, word: str, timeout_s: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command ("srvr", "ruok", "mntr") and return the reply."""
    with socket.create_connection((LOCALHOST, port), timeout=timeout_s) as sock:
        sock.sendall(word.encode())
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperServer(RestartableServer):
    """Standalone ZooKeeper with its own data dir; restartable on the same port and data.

    Attributes: ``hosts`` ("127.0.0.1:PORT"), ``port``, ``data_dir``, ``log_path``,
    ``startup_s`` (seconds the last start took until ZooKeeper served requests).
    """

    stop_timeout_s = 10.0

    def __init__(self, workdir: Path, name: str = "zookeeper") -> None:
        self.workdir = Path(workdir)
        self.name = name
        self.data_dir = self.workdir / "data"
        self.config_path = self.workdir / "zoo.cfg"
        self.log_path = self.workdir / "zookeeper.log"
        self.port = 0
        self.startup_s = 0.0
        self._process: ServerProcess | None = None
        self._clients: list = []
        self._admin = None

    @property
    def hosts(self) -> str:
        return f"{LOCALHOST}:{self.port}"

    def config_lines(self) -> list[str]:
        """zoo.cfg for this server; subclasses append TLS settings."""
        return [
            f"dataDir={self.data_dir}",
            f"clientPort={self.port}",
            f"clientPortAddress={LOCALHOST}",
            "tickTime=500",  # session timeouts are 2..20 ticks: short for fault tests
            "minSessionTimeout=1000",
            "maxSessionTimeout=30000",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
        ]

    def jvm_flags(self) -> list[str]:
        return ["-Dzookeeper.admin.enableServer=false"]

    def _command(self) -> list[str]:
        return [
            java_binary(),
            *SERVER_JVM_FLAGS,
            *self.jvm_flags(),
            "-cp",
            zookeeper_classpath(),
            ZOOKEEPER_MAIN,
            str(self.config_path),
        ]

    def _launch(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("\n".join(self.config_lines()) + "\n")
        self._process = ServerProcess(self.name, self._command(), self.log_path)
        self._process.start()
        try:
            self.startup_s = self._process.wait_until(self._serving, "serving requests")
        except Exception:
            self._process.kill()
            raise

    def _serving(self) -> bool:
        return "Mode: standalone" in four_letter_word(self.port, "srvr")

    def kazoo(self, chroot: str = "", **kwargs):
        """A started KazooClient (stopped and closed at teardown).

        :param chroot: optional "/path" appended to ``hosts``.
        """
        from kazoo.client import KazooClient

        client = KazooClient(hosts=self.hosts + chroot, timeout=10, **kwargs)
        client.start(timeout=30)
        self._clients.append(client)
        return client

    @contextmanager
    def client(self, chroot: str = "", **kwargs):
        """:meth:`kazoo` for one test: stopped and closed when the block ends. A connected client's
        thread runs (and calls ``random`` for its ping jitter) until it is stopped."""
        client = self.kazoo(chroot, **kwargs)
        try:
            yield client
        finally:
            self._clients.remove(client)
            client.stop()
            client.close()

    def admin_client(self):
        """The server's own long-lived client (unchrooted), reconnecting across stop/start."""
        if self._admin is None:
            self._admin = self.kazoo(
                connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1},
                command_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1, "deadline": 60},
            )
        return self._admin

    def close_clients(self) -> None:
        for client in self._clients:
            try:
                client.stop()
                client.close()
            except Exception:  # teardown must reach every client
                pass
        self._clients.clear()
        self._admin = None

    def shutdown(self) -> None:
        """Teardown: close clients, stop the server."""
        self.close_clients()
        self.stop()
