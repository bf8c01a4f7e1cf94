"""Start, watch and stop server processes for the integration tests.

Every process writes stdout+stderr to its own log file, runs in its own process group (so a
JVM and anything it forks die together) and is registered for a kill at interpreter exit, so a
failing or interrupted test run leaves no server behind.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

LOCALHOST = "127.0.0.1"
#: How long a server may take to answer before the fixture fails (2 shared cores, cold JVM).
STARTUP_TIMEOUT_S = 90.0
LOG_TAIL_LINES = 60

_LIVE: set["ServerProcess"] = set()


def free_ports(count: int = 1) -> list[int]:
    """Return ``count`` distinct TCP ports that were free on 127.0.0.1 a moment ago.

    All sockets stay open until every port is chosen, so the ports are distinct; another
    process can still grab one before the server binds it (callers retry on bind errors).
    """
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOCALHOST, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def free_port() -> int:
    """Return one TCP port that was free on 127.0.0.1 a moment ago."""
    return free_ports(1)[0]


def port_is_open(port: int, host: str = LOCALHOST, timeout_s: float = 0.5) -> bool:
    """True if a TCP connect to host:port succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """Last ``lines`` lines of a log file ("" if it does not exist)."""
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _die_with_parent() -> None:
    """preexec_fn: put the child in its own group and SIGKILL it if pytest itself dies.

    prctl(PR_SET_PDEATHSIG) covers the case atexit cannot: pytest killed by SIGKILL / OOM.
    """
    os.setsid()
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except OSError:
        pass


class ServerProcess:
    """One long-running server process with its log file.

    :param name: label used in failure messages ("zookeeper", "kafka 3.9.2 (zk)").
    :param argv: command line.
    :param log_path: file that receives stdout and stderr (appended across restarts).
    """

    def __init__(
        self, name: str, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = Path(log_path)
        self.env = env
        self.cwd = cwd
        self._popen: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    def is_running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def start(self) -> None:
        """Launch the process (no-op if it is already running)."""
        if self.is_running():
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start {time.strftime('%H:%M:%S')}: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                preexec_fn=_die_with_parent,
            )
        _LIVE.add(self)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (graceful shutdown), then SIGKILL after ``timeout_s``."""
        if self._popen is None:
            return
        if self._popen.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self._popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        _LIVE.discard(self)

    def kill(self) -> None:
        """SIGKILL the whole process group, no shutdown hooks (crash simulation too)."""
        if self._popen is None:
            return
        self._signal_group(signal.SIGKILL)
        try:
            self._popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        _LIVE.discard(self)

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self._popen.pid, sig)
        except ProcessLookupError:
            pass

    def failure(self, reason: str) -> str:
        """A failure message naming the server, the reason and the tail of its log."""
        status = "running" if self.is_running() else f"exited with {self._popen.returncode if self._popen else None}"
        return f"{self.name} {reason} ({status}); log {self.log_path}, last lines:\n{log_tail(self.log_path)}"

    def wait_until(
        self, ready: Callable[[], bool], what: str, timeout_s: float = STARTUP_TIMEOUT_S, interval_s: float = 0.25
    ) -> float:
        """Poll ``ready()`` until it returns True; return the seconds waited.

        :raises ServerStartError: the process exited, or ``timeout_s`` passed.
        """
        started = time.monotonic()
        last_probe = "probe said not ready"
        while True:
            if not self.is_running():
                raise ServerStartError(self.failure(f"exited before {what}"))
            try:
                if ready():
                    return time.monotonic() - started
            except Exception as error:  # probes fail in many ways until the server is up
                last_probe = f"last probe error: {type(error).__name__}: {error}"
            if time.monotonic() - started > timeout_s:
                raise ServerStartError(self.failure(f"did not get to '{what}' within {timeout_s:.0f} s; {last_probe}"))
            time.sleep(interval_s)

    def log_contains(self, *needles: str) -> bool:
        text = log_tail(self.log_path, lines=400)
        return any(needle in text for needle in needles)


class ServerStartError(RuntimeError):
    """A server did not come up; the message carries the tail of its log."""


BIND_ERRORS = ("Address already in use", "BindException", "Failed to bind")


def start_with_port_retry(make_and_start: Callable[[], "ServerProcess"], attempts: int = 3):
    """Run ``make_and_start`` (which picks fresh ports each call) until no bind race is lost.

    Free ports are only free when chosen; another helper's server can take one first.
    """
    for attempt in range(attempts):
        try:
            return make_and_start()
        except ServerStartError as error:
            if attempt == attempts - 1 or not any(e in str(error) for e in BIND_ERRORS):
                raise


class RestartableServer:
    """Life cycle shared by the harness servers: first start on free ports (retried when another
    process wins a port), later starts on the same ports and data; graceful stop and SIGKILL.

    Subclasses set ``port`` (0 = not chosen yet) and ``_process`` in ``__init__`` and provide
    ``choose_ports()`` and ``_launch()`` (write config, start, wait until ready).
    """

    port: int
    _process: ServerProcess | None
    #: seconds a graceful stop may take before the process group is killed
    stop_timeout_s = 30.0

    def choose_ports(self) -> None:
        (self.port,) = free_ports(1)

    def _launch(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start and wait until ready (same ports and data on a restart).

        :raises ServerStartError: not ready within the start-up timeout (log tail included).
        """
        if self.is_running():
            return
        if self.port:
            self._launch()
        else:
            start_with_port_retry(self._launch_on_new_ports)

    def _launch_on_new_ports(self) -> None:
        self.choose_ports()
        self._launch()

    def is_running(self) -> bool:
        return self._process is not None and self._process.is_running()

    def stop(self) -> None:
        """Graceful stop; clients see a disconnect. ``start()`` brings it back."""
        if self._process is not None:
            self._process.stop(timeout_s=self.stop_timeout_s)

    def kill(self) -> None:
        """SIGKILL (a crash); ``start()`` brings it back."""
        if self._process is not None:
            self._process.kill()


@atexit.register
def _kill_leftovers() -> None:
    for process in list(_LIVE):
        process.kill()
