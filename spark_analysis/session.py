"""The only SparkSession builder: one quiet session per command, and its progress display.

Quiet means the JVM starts with our log4j2 configuration (errors only, or INFO with
``--verbose``) so nothing of Spark's start-up chatter reaches the terminal; ``spark.ui`` is off
and shuffles use few partitions because the inputs of one command fit one machine by default.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Iterator

from kconfigs.errors import KconfigsError

_LOG4J2_TEMPLATE = """\
status = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
rootLogger.level = {level}
rootLogger.appenderRef.console.ref = console
logger.parquet.name = org.apache.parquet
logger.parquet.level = {level}
"""


#: groups an object hash aggregate (percentile_approx) keeps in memory per task before sorting
OBJECT_AGG_GROUPS = 10_000


#: inputs up to this size are small: compiling whole-stage code, adaptive re-planning (one more
#: job per shuffle) and several shuffle partitions cost more there than they save (a few thousand
#: samples: about 4 s of a cold JVM's time; benchmarks/RESULTS.md, small runs). Expressions are
#: interpreted too: Janino, which compiles generated code, comes from a signed jar, which a
#: class-data archive cannot hold, and its first compiles cost a cold JVM ~0.5 CPU-s.
SMALL_INPUT_BYTES = 32 << 20
_SMALL_INPUT_SETTINGS = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


class JavaNotFound(KconfigsError):
    """Spark needs a Java runtime and none was found."""


@dataclass(frozen=True)
class SessionOptions:
    """How to start Spark: ``master`` (``local[*]`` default), verbosity, shuffle partitions."""

    master: str = "local[*]"
    verbose: bool = False
    shuffle_partitions: int = 8
    driver_memory: str = "2g"
    app_name: str = "kconfigs-analyze"
    small_input: bool = False  # a short run: JIT and class path sized for it (SHORT_RUN_JAVA_OPTS, HOT_JAR_PREFIXES)
    #: ``analyze prepare`` only: the short run's driver writes its class-data archive here on exit
    archive_classes_to: str | None = None


#: a run over a small input lasts seconds: C2's optimizing compiles cost more CPU than they win
#: back in that time (on 2 cores, they compete with the job itself)
SHORT_RUN_JAVA_OPTS = "-XX:TieredStopAtLevel=1"

#: jars of Spark's jars/ directory that a report loads most classes from, most first (a class-load
#: log of a small report: catalyst 2,500 classes, scala-library 1,100, core 1,100, ...). The JVM's
#: class path is searched jar by jar, and these sort after ~220 of Spark's 280 jars: each of a
#: cold run's ~12,000 class loads probed some 220 jar indexes first. Named again at the head of
#: the driver's class path they are found first; the later copies are never read.
HOT_JAR_PREFIXES = (
    "spark-catalyst_",
    "scala-library-",
    "spark-core_",
    "scala-reflect-",
    "spark-sql-api_",
    "spark-sql_",
    "spark-config_",
    "spark-network-common_",
    "spark-common-utils_",
    "spark-unsafe_",
    "spark-kvstore_",
    "spark-network-shuffle_",
    "scala-parallel-collections_",
)


def hot_jars_first(spark_home: str) -> str | None:
    """The driver class path prefix of :data:`HOT_JAR_PREFIXES` (None: no such jars/ directory)."""
    jars = os.path.join(spark_home, "jars")
    try:
        names = sorted(os.listdir(jars))
    except OSError:
        return None
    found = [next((n for n in names if n.startswith(p) and n.endswith(".jar")), None) for p in HOT_JAR_PREFIXES]
    return os.pathsep.join(os.path.join(jars, n) for n in found if n is not None) or None


def find_java() -> str:
    """Return the java executable Spark will use. :raises JavaNotFound:"""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = os.path.join(java_home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
        raise JavaNotFound(f"JAVA_HOME={java_home} has no bin/java: install Java 17+ or fix JAVA_HOME")
    found = shutil.which("java")
    if found is None:
        raise JavaNotFound("Java not found: Spark needs Java 17+ (install it or set JAVA_HOME)")
    return found


def _write_log4j2(directory: str, verbose: bool) -> str:
    path = os.path.join(directory, "log4j2.properties")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(_LOG4J2_TEMPLATE.format(level="info" if verbose else "error"))
    return path


@contextlib.contextmanager
def spark_session(options: SessionOptions = SessionOptions()) -> Iterator["object"]:
    """Yield a started SparkSession and stop it afterwards.

    :raises JavaNotFound: before trying to start the JVM.
    :raises KconfigsError: when the JVM does not start (message names the master).
    """
    find_java()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:  # embedded use (tests, notebooks): borrow it and leave it running
        yield active
        return
    # Spark's Python workers run PYSPARK_PYTHON, by default whatever "python3" is first on PATH:
    # not necessarily this interpreter, nor one that has this installation (the what-if replay
    # would import another copy of kconfigs_enforcement, or none). Unless told otherwise, they
    # run on the driver's interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory(prefix="kconfigs-spark-") as scratch:
        jvm_log = os.path.join(tempfile.gettempdir(), f"kconfigs-spark-{os.getpid()}.log")
        log4j = _write_log4j2(scratch, options.verbose)
        java_opts = f"-Dlog4j2.configurationFile=file:{log4j} -Dlog4j.configurationFile=file:{log4j}"
        short_run = short_run_driver(options.archive_classes_to) if options.small_input else None
        driver_opts = f"{java_opts} {short_run.java_options}" if short_run is not None else java_opts
        builder = (
            SparkSession.builder.master(options.master)
            .appName(options.app_name)
            .config("spark.driver.extraJavaOptions", driver_opts)
            .config("spark.executor.extraJavaOptions", java_opts)
            .config("spark.driver.memory", options.driver_memory)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")  # we draw our own progress
            .config("spark.sql.shuffle.partitions", str(options.shuffle_partitions))
            # percentile_approx is an object aggregate: past 128 groups in a task (default) Spark
            # falls back to sorting the task's rows; a JmxTool dump has ~1,000 series per task
            # and the digests of 10,000 fit the driver heap easily (2.3x faster at 1e7 samples)
            .config("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", str(OBJECT_AGG_GROUPS))
            .config("spark.sql.session.timeZone", "UTC")
            # lenient casts: a bad number becomes null and is counted as malformed, not a crash
            .config("spark.sql.ansi.enabled", "false")
            .config("spark.sql.mapKeyDedupPolicy", "LAST_WIN")  # repeated Prometheus labels
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            # PySpark 4 records the Python call site of every Column function for its error
            # messages: ~6 JVM round trips each, about half a second of building a small run's
            # plan; kconfigs reports Spark errors in its own one line and never shows them
            .config("spark.python.sql.dataFrameDebugging.enabled", "false")
            .config("spark.local.dir", scratch)
        )
        warm_up = SqlParserWarmUp() if options.small_input else None
        if short_run is not None and short_run.class_path is not None:
            # replaces any spark.driver.extraClassPath of spark-defaults.conf, which the
            # analysis's own jobs (text files in, rows out) do not need
            builder = builder.config("spark.driver.extraClassPath", short_run.class_path)
        try:
            with _jvm_stderr_to(None if options.verbose else jvm_log):
                spark = builder.getOrCreate()
        except Exception as err:  # the JVM gateway raises bare Exceptions (py4j / RuntimeError)
            raise KconfigsError(f"Spark did not start on master {options.master}: {_first_line(err)}") from None
        finally:
            if warm_up is not None:
                warm_up.stop_waiting()
        spark.sparkContext.setLogLevel("INFO" if options.verbose else "ERROR")
        from kconfigs_analysis.shipping import ship_code

        ship_code(spark, scratch)  # a cluster's executors may not have kconfigs installed
        try:
            with _spark_errors_mapped(jvm_log if not options.verbose else None):
                yield spark
        finally:
            with contextlib.suppress(Exception):  # the JVM may already be gone
                spark.stop()
            if options.archive_classes_to is not None:
                _await_jvm_exit()
        with contextlib.suppress(OSError):
            os.remove(jvm_log)  # kept only when something failed


class SqlParserWarmUp:
    """Parse :data:`local_frames.SAMPLE_STATEMENTS` on a thread as soon as the JVM is up.

    A small run's first queries are SQL (inline tables, literal arrays), and the SQL parser's first
    use costs a cold JVM 0.3-0.5 s (the grammar's tables are built and its code warmed then). The
    JVM is up some 2.5 s before the session is: creating SparkContext and SparkSession runs on one
    JVM thread, so on a machine with a second core this parse is free. The parser is a JVM-wide
    object (``CatalystSqlParser``), so it needs no session. A failure only loses the head start
    (the queries parse the same without it), so it is kept in :attr:`error`, not raised.
    """

    POLL_S = 0.01

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.parsed = threading.Event()
        self._gave_up = threading.Event()
        threading.Thread(target=self._run, name="kconfigs-sql-parser-warm-up", daemon=True).start()

    def stop_waiting(self) -> None:
        """The session is up or failed: a warm-up still waiting for the JVM gives up."""
        self._gave_up.set()

    def _run(self) -> None:
        from pyspark import SparkContext

        while SparkContext._gateway is None:  # set by PySpark once the JVM answers
            if self._gave_up.wait(self.POLL_S):
                return
        try:
            warm_sql_parser(SparkContext._gateway)
            self.parsed.set()
        except Exception as err:  # py4j's errors are bare Exceptions
            self.error = err


def warm_sql_parser(gateway) -> None:
    """Parse every sample statement with the JVM's SQL parser (through py4j ``gateway``)."""
    from py4j.java_gateway import JavaClass

    from kconfigs_analysis.local_frames import SAMPLE_STATEMENTS

    parser_object = JavaClass("org.apache.spark.sql.catalyst.parser.CatalystSqlParser$", gateway._gateway_client)
    parser = getattr(parser_object, "MODULE$")
    for statement in SAMPLE_STATEMENTS:
        parser.parsePlan(statement)


@dataclass(frozen=True)
class ShortRunDriver:
    """A short run's driver: its extra JVM options and class path prefix (None: Spark's own)."""

    java_options: str
    class_path: str | None
    digest: str  # class_archive.fingerprint of this JDK, PySpark, options and class path


def short_run_driver(archive_classes_to: str | None = None) -> ShortRunDriver:
    """JIT options, :data:`HOT_JAR_PREFIXES` first, and the class-data archive of ``analyze
    prepare`` when there is one for this setup (``archive_classes_to``: write one there instead)."""
    from pyspark.find_spark_home import _find_spark_home

    from kconfigs_analysis import class_archive

    spark_home = _find_spark_home()
    class_path = hot_jars_first(spark_home)
    digest = class_archive.fingerprint(find_java(), spark_home, SHORT_RUN_JAVA_OPTS, class_path or "")
    if archive_classes_to is not None:
        extra = class_archive.dump_options(archive_classes_to)
    else:
        archive = class_archive.find_archive(digest)
        extra = "" if archive is None else class_archive.use_options(archive)
    return ShortRunDriver(f"{SHORT_RUN_JAVA_OPTS} {extra}".strip(), class_path, digest)


#: a JVM writing its class-data archive on exit takes a few seconds to tens of seconds (2 cores)
JVM_EXIT_TIMEOUT_S = 600


def _await_jvm_exit() -> None:
    """Let the driver JVM exit and wait for it: it writes its class-data archive on the way out.

    PySpark's driver JVM exits when its standard input closes (that is how it follows a Python
    driver that dies); ``spark.stop()`` alone leaves it running until this process ends.
    """
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is None:  # not a JVM this process started
        return
    process.stdin.close()
    try:
        process.wait(timeout=JVM_EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise KconfigsError(f"Spark's driver JVM did not exit within {JVM_EXIT_TIMEOUT_S} s") from None
    SparkContext._gateway = None
    SparkContext._jvm = None


@contextlib.contextmanager
def sized_for(spark, input_bytes: int) -> Iterator[None]:
    """Settings for the size of this job's input, restored afterwards (a borrowed session is shared)."""
    if input_bytes > SMALL_INPUT_BYTES:
        yield
        return
    saved = {key: spark.conf.get(key, None) for key in _SMALL_INPUT_SETTINGS}
    for key, value in _SMALL_INPUT_SETTINGS.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@contextlib.contextmanager
def _spark_errors_mapped(jvm_log: str | None) -> Iterator[None]:
    """Spark / py4j failures (a crashed or killed JVM, an executor error) -> one line.

    Our own KconfigsErrors pass through; the JVM's log stays on disk and is named.
    """
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        yield
    except (Py4JError, PySparkException, ConnectionError, EOFError) as err:
        where = f"; Spark's log: {jvm_log}" if jvm_log else ""
        raise KconfigsError(f"Spark failed: {_first_line(err)}{where}") from None


@contextlib.contextmanager
def _jvm_stderr_to(log_path: str | None) -> Iterator[None]:
    """Start the JVM with its stderr going to ``log_path`` (None: the terminal).

    The java launcher prints notes (e.g. "Using incubator modules") before log4j is configured,
    so only an fd-level redirect keeps the terminal quiet. The child keeps the redirected fd;
    ours is restored as soon as the JVM is up.
    """
    if log_path is None:
        yield
        return
    import sys
    import warnings

    # pyspark warns about pandas versions on import; that is noise for a CLI user
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark\..*")
    sys.stderr.flush()
    saved_fd = os.dup(2)
    with open(log_path, "ab") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


class Progress:
    """What the command is doing, on stderr, from its first moment (quiet: nothing).

    Not a terminal (a log, a pipe): one plain line per step. A terminal: rich's transient status
    line, which once :meth:`watch` is given the session also shows Spark's stage and task counts,
    polled from ``statusTracker`` by a daemon thread (PySpark has no listener callbacks).
    """

    def __init__(self, enabled: bool = True, poll_interval_s: float = 0.25, stream=None):
        import sys

        self._enabled = enabled
        self._stream = stream or sys.stderr
        self._poll_interval_s = poll_interval_s
        self._stop = threading.Event()
        self._label = ""
        self._spark = None
        self._status = None
        self._live = enabled and self._stream.isatty()

    def step(self, label: str) -> None:
        """Name the current step (e.g. "reading dumps"); on a terminal shown before the task counts.

        Never raises: progress is decoration, and a display that fails (a terminal gone, a Spark
        context stopping) must not cost the command its result.
        """
        self._label = label
        if not self._enabled:
            return
        with contextlib.suppress(Exception):
            if self._live:
                self._refresh()
            else:
                self._stream.write(f"kconfigs analyze: {label}\n")
                self._stream.flush()

    def watch(self, spark) -> None:
        """Show the stages of this session's jobs (terminal only), until :meth:`unwatch`."""
        self._spark = spark
        if self._status is not None:
            threading.Thread(target=self._poll, daemon=True).start()

    def unwatch(self) -> None:
        """The session is stopping: later steps show no stages (a stopped session has no context)."""
        self._spark = None

    def _describe_stages(self) -> str:
        spark = self._spark
        try:
            tracker = spark.sparkContext.statusTracker() if spark is not None else None
            if tracker is None:
                return ""
            parts = []
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    parts.append(f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks")
            return ", ".join(parts)
        except Exception:  # py4j's errors are bare Exceptions; a stopped context is None
            return ""

    def _refresh(self) -> None:
        if self._status is not None:
            self._status.update(f"[bold]{self._label}[/bold] {self._describe_stages()}")

    def _poll(self) -> None:
        while not self._stop.wait(self._poll_interval_s):
            with contextlib.suppress(Exception):  # the context may be stopping under us
                self._refresh()

    def __enter__(self) -> "Progress":
        if self._live:
            from rich.console import Console

            self._status = Console(file=self._stream).status(self._label or "starting")
            self._status.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._spark = None
        if self._status is not None:
            with contextlib.suppress(Exception):  # an error on the way out must not hide the command's own
                self._status.__exit__(*exc)
