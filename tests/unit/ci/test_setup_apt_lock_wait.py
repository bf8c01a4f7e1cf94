"""``.ci/setup-test-env`` waits for an apt/dpkg lock another process holds, instead of failing.

A child process holds a real POSIX (fcntl) lock, as apt and dpkg take theirs, on a file of the
test's own; ``KCONFIGS_APT_LOCKS`` points the script's wait at it, so the machine's real apt locks
are never touched. Every wait in these tests is bounded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SETUP_SCRIPT = Path(__file__).resolve().parents[3] / ".ci" / "setup-test-env"
HOLDER = """
import fcntl, sys
lock = open(sys.argv[1], "w")
fcntl.lockf(lock, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()  # hold until the test closes our stdin
"""


@pytest.fixture
def held_lock(tmp_path):
    """(lock file, holder process): the lock is held until the holder's stdin is closed."""
    path = tmp_path / "lock-frontend"
    path.touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        yield path, holder
    finally:
        holder.kill()
        holder.wait(timeout=10)
        holder.stdout.close()
        if not holder.stdin.closed:
            holder.stdin.close()


def start_wait(lock_path: Path, wait_s: int) -> subprocess.Popen:
    # $0 = the script's name, as its log lines carry it when run
    script = f'source "{SETUP_SCRIPT}" && wait_for_apt_locks && echo free'
    env = {**os.environ, "KCONFIGS_APT_LOCKS": str(lock_path), "KCONFIGS_APT_LOCK_WAIT_S": str(wait_s)}
    return subprocess.Popen(
        ["bash", "-c", script, "setup-test-env"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_waits_for_a_held_lock_and_goes_on_once_it_is_released(held_lock):
    path, holder = held_lock
    waiter = start_wait(path, wait_s=60)
    try:
        line = waiter.stderr.readline()
        assert line.startswith(f"setup-test-env: waiting up to 60 s for {path}, locked by process {holder.pid} (")
        assert line.endswith(") (another apt or dpkg run)\n")
        time.sleep(1.5)
        assert waiter.poll() is None, "returned while the lock was still held"
        holder.stdin.close()  # the holder exits: its lock goes with it
        out, err = waiter.communicate(timeout=15)
    finally:
        waiter.kill()
        waiter.wait(timeout=10)
    assert waiter.returncode == 0
    assert out == "free\n"
    assert err == ""  # one line in all, however long the wait


def test_gives_up_after_the_bound_with_one_line_naming_the_lock(held_lock):
    path, holder = held_lock
    started = time.monotonic()
    waiter = start_wait(path, wait_s=2)
    try:
        out, err = waiter.communicate(timeout=30)
    finally:
        waiter.kill()
        waiter.wait(timeout=10)
    assert waiter.returncode == 1
    assert out == ""
    waiting, gave_up = err.splitlines()
    assert waiting.startswith(f"setup-test-env: waiting up to 2 s for {path}, locked by process {holder.pid} (")
    assert gave_up.startswith(f"setup-test-env: error: {path} still locked by process {holder.pid} (")
    assert gave_up.endswith("after 2 s (KCONFIGS_APT_LOCK_WAIT_S to wait longer)")
    assert time.monotonic() - started >= 2


def test_a_free_lock_is_not_waited_for(tmp_path):
    path = tmp_path / "lock-frontend"
    path.touch()
    waiter = start_wait(path, wait_s=60)
    out, err = waiter.communicate(timeout=15)
    assert (waiter.returncode, out, err) == (0, "free\n", "")
