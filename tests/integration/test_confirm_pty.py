"""Destructive commands ask on a terminal: driven through a real pseudo-terminal (stdlib pty),
the removals are listed, "n" (or just Enter) changes nothing, "y" goes ahead."""

from __future__ import annotations

import hashlib
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kconfigs.model import MATCH_ALL
from kconfigs.stores.sqlite import SqliteStore

PROMPT_TIMEOUT_S = 60


def _in_pty(argv: list[str], answer: str | None, env: dict, cwd: Path) -> tuple[int, str]:
    """Run ``kconfigs argv`` on a new pseudo-terminal, type ``answer`` + Enter once the question
    appears; (exit code, everything the terminal showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kconfigs", *argv],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
        close_fds=True,
    )
    os.close(slave)
    shown, answered, deadline = b"", answer is None, time.monotonic() + PROMPT_TIMEOUT_S
    # poll, not select: late in a long session the terminal's descriptor can be above select's 1024
    poller = select.poll()
    poller.register(master, select.POLLIN)
    while time.monotonic() < deadline:
        ready = poller.poll(200)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        if not answered and b"[y/N]" in shown:
            os.write(master, answer.encode() + b"\r")
            answered = True
        if proc.poll() is not None and not ready:
            break
    proc.wait(timeout=PROMPT_TIMEOUT_S)
    os.close(master)
    return proc.returncode, shown.decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.fixture
def setup(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_")}
    env.update(
        KCONFIGS_HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "config"), NO_COLOR="1", TERM="dumb"
    )
    victim = tmp_path / "victim.db"
    store = SqliteStore(victim)
    try:
        from kconfigs.model import QuotaEntity

        store.alter(QuotaEntity(user="keep"), lambda c: {"producer_byte_rate": "1"})
        store.alter(QuotaEntity(user="gone"), lambda c: {"producer_byte_rate": "2", "consumer_byte_rate": "3"})
    finally:
        store.close()
    (tmp_path / "keep.toml").write_text('[[quota]]\nentity = { user = "keep" }\nproducer_byte_rate = 1\n')
    return tmp_path, env, victim


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _users(path: Path) -> set:
    store = SqliteStore(path, read_only=True)
    try:
        return {r.entity.user for r in store.describe(MATCH_ALL)}
    finally:
        store.close()


@pytest.mark.parametrize("answer", ["n", ""])
def test_a_prune_lists_the_removals_and_no_changes_nothing(setup, answer):
    tmp_path, env, victim = setup
    before = _digest(victim)
    code, shown = _in_pty(["apply", "keep.toml", "--prune", "--store", str(victim)], answer, env, tmp_path)
    assert code == 1
    assert "- user-principal 'gone'\n    - consumer_byte_rate = 3\n    - producer_byte_rate = 2\n" in shown
    assert "apply keep.toml --prune: remove the quotas of this 1 entity? [y/N]: " in shown
    assert shown.rstrip().endswith("Nothing changed.")
    assert _digest(victim) == before


def test_a_prune_answered_yes_removes(setup):
    tmp_path, env, victim = setup
    code, shown = _in_pty(["apply", "keep.toml", "--prune", "--store", str(victim)], "y", env, tmp_path)
    assert code == 0, shown
    assert _users(victim) == {"keep"}


def test_migrate_onto_a_store_with_quotas_asks_and_yes_skips_the_question(setup):
    tmp_path, env, victim = setup
    source = tmp_path / "source.db"
    store = SqliteStore(source)
    try:
        from kconfigs.model import QuotaEntity

        store.alter(QuotaEntity(user="gone"), lambda c: {"producer_byte_rate": "7"})
    finally:
        store.close()
    argv = ["migrate", "--from", f"sqlite://{source}", "--to", f"sqlite://{victim}"]
    before = _digest(victim)
    code, shown = _in_pty(argv, "n", env, tmp_path)
    assert code == 1 and "    ~ producer_byte_rate: 2 -> 7\n" in shown and _digest(victim) == before
    code, shown = _in_pty([*argv, "--yes"], None, env, tmp_path)
    assert code == 0 and "[y/N]" not in shown, shown
