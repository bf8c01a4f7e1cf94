"""Run Apache Kafka's own Java classes (tools and servers) from the cached Maven jars.

``.ci/setup-test-env`` puts each version's full runtime classpath (kafka_2.13, kafka-tools
where present, and a logging binding) into ``<cache>/kafka-<version>/*.jar``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import zipfile
from collections.abc import Sequence
from pathlib import Path

from .cds import ToolArchive
from .versions import SETUP_HINT, MissingTestDependency, harness_cache_dir

LOGGING_DIR = Path(__file__).resolve().parent / "logging"

#: Short-lived tools: C1 only and a small serial heap start fastest on 2 shared cores
#: (-Xshare:auto uses the JDK's class-data archive when it is usable).
TOOL_JVM_FLAGS = (
    "-Xms32m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Xshare:auto",
    "-Djava.awt.headless=true",
)
#: Brokers: still C1 only (start-up dominates test time) but a heap that holds a few
#: thousand produce batches for quota tests.
SERVER_JVM_FLAGS = (
    "-Xms128m",
    "-Xmx768m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Xshare:auto",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
)


def java_binary() -> str:
    """Path of ``java`` ($JAVA_HOME first).

    :raises MissingTestDependency: no JVM installed.
    """
    java_home = os.environ.get("JAVA_HOME")
    if java_home and Path(java_home, "bin", "java").is_file():
        return str(Path(java_home, "bin", "java"))
    found = shutil.which("java")
    if not found:
        raise MissingTestDependency(f"no java on PATH: {SETUP_HINT}")
    return found


def kafka_jar_dir(version: str) -> Path:
    return harness_cache_dir() / f"kafka-{version}"


@functools.lru_cache(maxsize=None)
def kafka_jars(version: str) -> tuple[Path, ...]:
    """All jars of one Kafka version's runtime classpath, sorted by name.

    :raises MissingTestDependency: the version was not fetched (or only partly).
    """
    jar_dir = kafka_jar_dir(version)
    core = jar_dir / f"kafka_2.13-{version}.jar"
    if not (jar_dir / ".complete").is_file() or not core.is_file():
        raise MissingTestDependency(f"Kafka {version} jars are missing from {jar_dir}: {SETUP_HINT}")
    return tuple(sorted(jar_dir.glob("*.jar")))


def kafka_classpath(version: str) -> str:
    return os.pathsep.join(str(jar) for jar in kafka_jars(version))


@functools.lru_cache(maxsize=None)
def _class_names(version: str) -> frozenset[str]:
    names = set()
    for jar in kafka_jars(version):
        with zipfile.ZipFile(jar) as archive:
            names.update(n[:-6].replace("/", ".") for n in archive.namelist() if n.endswith(".class"))
    return frozenset(names)


def has_kafka_class(version: str, class_name: str) -> bool:
    """True if ``class_name`` (dotted) is on the version's classpath."""
    return class_name in _class_names(version)


def first_kafka_class(version: str, candidates: Sequence[str]) -> str:
    """The first of ``candidates`` present in the version's jars.

    Kafka moves tools between modules across versions (Scala ``kafka.*`` to Java
    ``org.apache.kafka.tools.*``), so callers list both names instead of hard-coding one.
    """
    for name in candidates:
        if has_kafka_class(version, name):
            return name
    raise MissingTestDependency(f"none of {list(candidates)} in Kafka {version} jars: {SETUP_HINT}")


def config_command_class(version: str) -> str:
    """Main class of kafka-configs.sh for ``version``."""
    return first_kafka_class(version, ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"))


def storage_tool_class(version: str) -> str:
    """Main class of kafka-storage.sh for ``version``."""
    return first_kafka_class(version, ("org.apache.kafka.tools.StorageTool", "kafka.tools.StorageTool"))


def _uses_log4j2(version: str) -> bool:
    return any(jar.name.startswith("log4j-core-") for jar in kafka_jars(version))


def logging_flags(version: str, role: str) -> list[str]:
    """System properties selecting our log config; ``role`` is "tools" or "server"."""
    if _uses_log4j2(version):
        return [f"-Dlog4j2.configurationFile={LOGGING_DIR / f'{role}-log4j2.properties'}"]
    return [f"-Dlog4j.configuration=file:{LOGGING_DIR / f'{role}-log4j.properties'}"]


def java_command(
    version: str, main_class: str, args: Sequence[str], role: str = "tools", extra_jvm_flags: Sequence[str] = ()
) -> list[str]:
    """argv that runs ``main_class`` of Kafka ``version`` like kafka-run-class.sh would."""
    base_flags = TOOL_JVM_FLAGS if role == "tools" else SERVER_JVM_FLAGS
    return [
        java_binary(),
        *base_flags,
        *logging_flags(version, role),
        *extra_jvm_flags,
        "-cp",
        kafka_classpath(version),
        main_class,
        *args,
    ]


def run_kafka_class(
    version: str,
    main_class: str,
    args: Sequence[str],
    timeout: float = 120,
    input: str | None = None,
    extra_jvm_flags: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run one Kafka tool to completion; text mode, stdout and stderr captured.

    Tool log output (WARN and above) goes to stderr, so stdout is the tool's own output.

    :raises subprocess.TimeoutExpired: the tool ran longer than ``timeout`` seconds.
    :raises MissingTestDependency: java or the jars are not installed.
    """
    archive = ToolArchive(java_binary(), version, main_class, kafka_jars(version))
    argv = java_command(version, main_class, args, "tools", [*archive.jvm_flags(), *extra_jvm_flags])
    try:
        return subprocess.run(
            argv,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    finally:
        archive.finish()


TOOL_BATCH_SOURCE = Path(__file__).resolve().parent / "ToolBatch.java"


class ToolBatch:
    """One JVM that runs ``main_class`` of Kafka ``version`` for many command lines in turn
    (ToolBatch.java): a differential test then pays one JVM start per version, not one per
    command. ``run`` answers like ``run_kafka_class``: a CompletedProcess with the exit status
    and the output a separate process would have printed. Not thread-safe: one caller at a time.

    :raises MissingTestDependency: java or the jars are not installed.
    """

    def __init__(self, version: str, main_class: str) -> None:
        import queue
        import threading

        self.version, self.main_class = version, main_class
        # Source-file mode compiles ToolBatch.java in memory against the version's jars.
        argv = java_command(version, str(TOOL_BATCH_SOURCE), [main_class], "tools")
        self._process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._answers: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read_answers, daemon=True)
        self._reader.start()

    def _read_answers(self) -> None:
        for line in self._process.stdout:
            if line.startswith(b"RESULT "):
                self._answers.put(line)
        self._answers.put(b"")  # the JVM ended

    def run(self, args: Sequence[str], timeout: float = 120) -> subprocess.CompletedProcess:
        """:raises RuntimeError: the JVM died or did not answer within ``timeout`` seconds."""
        import base64
        import queue

        encoded = [base64.b64encode(a.encode()).decode() for a in args]
        self._process.stdin.write((" ".join([str(len(args)), *encoded]) + "\n").encode())
        self._process.stdin.flush()
        try:
            answer = self._answers.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise RuntimeError(f"{self.main_class} {self.version} did not answer {list(args)}") from None
        if not answer:
            raise RuntimeError(f"the {self.main_class} {self.version} batch JVM exited")
        _, rc, out, err = answer.decode().rstrip("\n").split(" ")
        return subprocess.CompletedProcess(
            list(args), int(rc), base64.b64decode(out).decode(), base64.b64decode(err).decode()
        )

    def close(self) -> None:
        """Stop the JVM and close both pipes (the reader ends at the JVM's end of output)."""
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._reader.join(timeout=10)
        for pipe in (self._process.stdin, self._process.stdout):
            if not pipe.closed:
                pipe.close()


#: the ToolBatches :func:`tool_batch` started, for :func:`close_tool_batches`
_STARTED_BATCHES: list[ToolBatch] = []


@functools.lru_cache(maxsize=None)
def tool_batch(version: str, main_class: str) -> ToolBatch:
    """The shared ToolBatch of (version, main class) for this test session (closed by
    :func:`close_tool_batches`, which the test session calls at its end, or at exit)."""
    import atexit

    batch = ToolBatch(version, main_class)
    _STARTED_BATCHES.append(batch)
    atexit.register(batch.close)
    return batch


def close_tool_batches() -> None:
    """Stop every shared ToolBatch JVM: the session does it before it checks what was left open
    (an atexit close would come after, and each JVM's two pipes would read as leaks)."""
    for batch in _STARTED_BATCHES:
        batch.close()
    _STARTED_BATCHES.clear()
    tool_batch.cache_clear()


def run_config_command(version: str, args: Sequence[str], timeout: float = 120) -> subprocess.CompletedProcess:
    """kafka-configs of Kafka ``version`` (its ConfigCommand) in the session's one JVM for that
    version: the output and exit status of a separate run, without a JVM start per command."""
    return tool_batch(version, config_command_class(version)).run(args, timeout)
