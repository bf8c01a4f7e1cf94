"""Small runs are quick: something is on stderr within 1 s of ``kconfigs analyze`` starting (on a
terminal or not; nothing with --quiet), and a report over a few thousand samples costs at most a
bare Spark session start (the same session options, measured in the same test) + 3 s."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.dumps import generated_dump

pytestmark = pytest.mark.integration
FIRST_OUTPUT_S = 1.0
OVERHEAD_S = 3.0


@pytest.fixture(scope="module")
def small_dump(tmp_path_factory) -> Path:
    return generated_dump(tmp_path_factory.mktemp("small") / "dump", samples=4000, entities=10)


def _seconds_to_first_stderr_byte(argv: list[str], terminal: bool) -> tuple[float, bytes]:
    """Start ``argv``; seconds until its stderr has a byte (then the process is stopped)."""
    if terminal:
        reader, writer = pty.openpty()
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=writer, stdin=subprocess.DEVNULL)
        os.close(writer)
    else:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        reader = process.stderr.fileno()
    started = time.monotonic()
    try:
        ready, _, _ = select.select([reader], [], [], 30)
        elapsed = time.monotonic() - started
        return elapsed, os.read(reader, 200) if ready else b""
    finally:
        process.kill()
        process.wait(timeout=30)
        if terminal:
            os.close(reader)


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_progress_is_on_stderr_within_one_second(small_dump, terminal):
    argv = [sys.executable, "-m", "kconfigs", "analyze", "report", str(small_dump), "--master", "local[2]"]
    elapsed, first = _seconds_to_first_stderr_byte(argv, terminal)
    assert first, "nothing on stderr"
    assert elapsed < FIRST_OUTPUT_S, (elapsed, first)
    if not terminal:
        assert first.startswith(b"kconfigs analyze: report: starting")


def _timed(argv: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    return time.monotonic() - started, result


@pytest.mark.xfail(
    strict=True,
    reason="not met yet: on the shared 2-core machine a 4,000-sample report measured "
    "19.6 s against a 10.3 s bare session at load 4 (9.3 s over; the driver's CPU time for the "
    "report fell from 10.7 to 6.6 s, most of it a cold JVM's first query: benchmarks/RESULTS.md, "
    "small runs)",
)
def test_small_report_costs_at_most_a_bare_session_plus_three_seconds(small_dump):
    # the session the command starts for a small input (spark_session, same options)
    bare_code = (
        "from kconfigs_analysis.session import SessionOptions, spark_session\n"
        "with spark_session(SessionOptions(master='local[2]', small_input=True)):\n    pass\n"
    )
    report = [
        sys.executable,
        "-m",
        "kconfigs",
        "analyze",
        "report",
        str(small_dump),
        "--master",
        "local[2]",
        "--format",
        "json",
        "--quiet",
    ]
    bare_s, bare = _timed([sys.executable, "-c", bare_code])
    report_s, result = _timed(report)
    assert bare.returncode == 0, bare.stderr
    assert result.returncode == 0 and result.stderr == "", result.stderr  # --quiet: nothing on stderr
    assert '"samples": 8000' in result.stdout
    assert report_s <= bare_s + OVERHEAD_S, f"report {report_s:.1f} s, bare session {bare_s:.1f} s"
