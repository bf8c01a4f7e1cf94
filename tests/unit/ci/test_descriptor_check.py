"""A test session fails when a descriptor its tests opened is still open after it (tests/conftest.py
with tests/harness/descriptors.py), naming what it refers to; a session that closes everything passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CASE = Path(__file__).with_name("leaky_session_case.py")


def run_case(leak: bool) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(CASE)],
        cwd=ROOT,
        env={**os.environ, "LEAK": "1" if leak else "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_descriptor_left_open_after_the_session_fails_it_and_is_named():
    done = run_case(leak=True)
    assert done.returncode == 1, done.stdout
    assert "1 passed" in done.stdout  # the test itself passed: the leak alone fails the run
    assert "FAILED: 1 descriptors still open after the session that were not open at its start:" in done.stdout
    assert "left-open.txt" in done.stdout


def test_a_session_that_closes_what_it_opened_passes():
    done = run_case(leak=False)
    assert done.returncode == 0, done.stdout
    assert "descriptors still open" not in done.stdout
