"""Root conftest: registers the real-server fixtures of tests/harness and enforces the
no-skip rule for integration tests on CI (style guide section 8)."""

from __future__ import annotations

import gc
import os
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
# Tests import the harness as ``harness`` however pytest was started (rootdir, import mode).
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from harness import descriptors  # noqa: E402
from harness.fixtures import (  # noqa: E402,F401  (fixtures are found by name)
    STARTUP_TIMES,
    kafka_zk_broker,
    kraft_broker,
    kraft_broker_3,
    kraft_broker_factory,
    tansu_broker,
    zk_client,
    zk_connect,
    zk_server,
    zk_tls_server,
)

INTEGRATION_DIR = TESTS_DIR / "integration"
#: wall seconds per test module, set-up and tear-down included (where CI's time goes)
MODULE_SECONDS: Counter = Counter()
SLOWEST_MODULES_SHOWN = 25
#: "start": descriptor -> target when the session started; "leaked": lines for those left open
SESSION_DESCRIPTORS: dict = {}


def _on_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes") or bool(os.environ.get("KCONFIGS_NO_SKIP"))


def _is_integration(item: pytest.Item) -> bool:
    return INTEGRATION_DIR in Path(str(item.fspath)).resolve().parents


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/integration/ gets the ``integration`` marker (-m integration)."""
    for item in items:
        if _is_integration(item):
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    """On CI a skipped integration test is a failure: CI installs everything it needs."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and _on_ci() and _is_integration(item):
        report.outcome = "failed"
        report.longrepr = f"integration test skipped on CI (not allowed; run .ci/setup-test-env): {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    before = descriptors.open_descriptors()
    started = time.monotonic()
    yield
    module = item.module.__name__ if item.module else str(item.fspath)
    MODULE_SECONDS[module] += time.monotonic() - started
    descriptors.record(module, before, descriptors.open_descriptors())


@pytest.fixture(scope="session", autouse=True)
def pyspark_jvm_stopped_at_the_end():
    """PySpark starts one JVM per Python process (the py4j gateway: its stdin pipe and two
    sockets) and keeps it after every SparkSession stops, for the next one; the test session stops
    it at its end as it stops its servers, so that what stays open after is a real leak."""
    yield
    pyspark = sys.modules.get("pyspark")
    gateway = pyspark.SparkContext._gateway if pyspark is not None else None
    if gateway is None:
        return
    gateway.shutdown()
    gateway.proc.stdin.close()  # the gateway server exits when its stdin closes
    gateway.proc.wait(timeout=60)
    pyspark.SparkContext._gateway = pyspark.SparkContext._jvm = None


def pytest_sessionstart(session: pytest.Session) -> None:
    SESSION_DESCRIPTORS["start"] = descriptors.open_targets()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Session-scoped servers and clients are torn down by now: whatever the tests opened and is
    still open leaked, and fails the run (the terminal summary lists it)."""
    from harness.java import close_tool_batches

    close_tool_batches()  # the session's kafka-configs JVMs, torn down as its servers are
    # objects no longer reachable close their descriptors when collected (a client a library built
    # and dropped when its constructor raised): only what is still held counts
    gc.collect()
    SESSION_DESCRIPTORS["leaked"] = descriptors.left_open(SESSION_DESCRIPTORS["start"], descriptors.open_targets())
    if SESSION_DESCRIPTORS["leaked"] and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter) -> None:
    terminalreporter.section("descriptors left open, by test module")
    for line in descriptors.summary_lines():
        terminalreporter.write_line(line)
    leaked = SESSION_DESCRIPTORS.get("leaked")
    if leaked:
        terminalreporter.write_line(
            f"FAILED: {len(leaked)} descriptors still open after the session that were not open at its start:", red=True
        )
        for line in leaked:
            terminalreporter.write_line(f"  {line}", red=True)
    if MODULE_SECONDS:
        terminalreporter.section(f"slowest test modules (wall s, {len(MODULE_SECONDS)} modules)")
        for module, seconds in MODULE_SECONDS.most_common(SLOWEST_MODULES_SHOWN):
            terminalreporter.write_line(f"{seconds:8.1f}  {module}")
    if STARTUP_TIMES:
        terminalreporter.section("server start-up times")
        for name, seconds in STARTUP_TIMES:
            terminalreporter.write_line(f"{name:<32} {seconds:6.2f} s")
