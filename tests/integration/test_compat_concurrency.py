"""Concurrent kconfigs processes altering different keys of one entity lose nothing (ZooKeeper:
compare-and-set multi-op with retry; embedded store: BEGIN IMMEDIATE), and every alter leaves
exactly one change notification. Readers running at the same time never see a broken entity."""

from __future__ import annotations

import shlex
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest
from compat_support import notifications

from kconfigs.stores.sqlite import SqliteStore

ROUNDS = 4
#: Every key a named user may hold: one writer process per key.
WRITERS = {
    "producer_byte_rate": lambda r: str(1000 + r),
    "consumer_byte_rate": lambda r: str(2000 + r),
    "request_percentage": lambda r: str(30 + r),
    "controller_mutation_rate": lambda r: str(40 + r),
    "producer_ids_rate": lambda r: str(50 + r),
    "SCRAM-SHA-256": lambda r: f"[iterations=4096,password=pw{r}]",
    "SCRAM-SHA-512": lambda r: f"[password=pw{r}]",
}
READERS = 3


def _kconfigs(connect_args, *args):
    return " ".join(shlex.quote(a) for a in [sys.executable, "-m", "kconfigs", *connect_args, *args])


def _run_concurrently(connect_args):
    """Start all writer and reader processes at once; each writer runs ROUNDS alters in a row."""
    procs = []
    for key, value in WRITERS.items():
        script = " && ".join(
            _kconfigs(connect_args, "--alter", "--user", "CN=shared user", "--add-config", f"{key}={value(r)}")
            for r in range(ROUNDS)
        )
        procs.append(
            subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    reader = " ; ".join([_kconfigs(connect_args, "--describe", "--user", "CN=shared user")] * ROUNDS)
    for _ in range(READERS):
        procs.append(
            subprocess.Popen(["bash", "-c", reader], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    outcomes = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    for rc, _, stderr in outcomes:
        assert rc == 0 and stderr == "", stderr
    for _, stdout, _ in outcomes[len(WRITERS) :]:
        for line in stdout.splitlines():
            assert line.startswith("Configs for user-principal 'CN=shared user' are")


def _final_line(connect_args):
    out = subprocess.run(
        ["bash", "-c", _kconfigs(connect_args, "--describe", "--user", "CN=shared user")],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def _assert_every_last_value_present(line):
    for key, value in WRITERS.items():
        if key.startswith("SCRAM"):
            assert f"{key}=salt=" in line and "password" not in line
        else:
            assert f"{key}={value(ROUNDS - 1)}" in line, (key, line)


@pytest.mark.timeout(600)
def test_concurrent_alters_on_zookeeper_lose_no_key_and_notify_once_each(zk_connect, zk_client):
    connect = ["--zookeeper", zk_connect]
    _run_concurrently(connect)
    _assert_every_last_value_present(_final_line(connect))
    changes = notifications(zk_client)
    assert changes == [{"version": 2, "entity_path": "users/CN%3Dshared%20user"}] * (len(WRITERS) * ROUNDS)


@pytest.mark.timeout(600)
def test_concurrent_alters_on_the_embedded_store_lose_no_key(tmp_path):
    db = tmp_path / "quotas.db"
    connect = ["--store", str(db)]
    SqliteStore(db).close()  # the readers start at once: a named store that does not exist yet is an error
    _run_concurrently(connect)
    _assert_every_last_value_present(_final_line(connect))
    with closing(sqlite3.connect(db)) as conn:  # sqlite3's own context manager only commits
        rows = conn.execute("SELECT data FROM config_change ORDER BY seq").fetchall()
    assert [bytes(r[0]) for r in rows] == [b'{"version":2,"entity_path":"users/CN%3Dshared%20user"}'] * (
        len(WRITERS) * ROUNDS
    )
