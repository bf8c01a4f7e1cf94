"""Concurrent alters of different keys of the same entities, by many separate processes.

Shared by the reliability test (kconfigs must lose nothing) and by
benchmarks/reliability_lost_updates.py, which also runs real kafka-configs 2.8.2 for contrast.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

KAFKA_USER_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
USER_KEYS = KAFKA_USER_KEYS + ("producer_ids_rate",)


@dataclass(frozen=True)
class Alter:
    user: str
    key: str
    value: str


def plan(processes: int, entities: int, keys: tuple[str, ...] = USER_KEYS) -> list[Alter]:
    """Process p sets key (p // entities) % len(keys) of user p % entities: every entity is hit by
    several processes at once, writing different keys."""
    return [Alter(f"user-{p % entities}", keys[(p // entities) % len(keys)], str(1000 + p)) for p in range(processes)]


def kconfigs_argv(connect: list[str], alter: Alter) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kconfigs",
        *connect,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        alter.user,
        "--add-config",
        f"{alter.key}={alter.value}",
    ]


def run_all(argvs: list[list[str]], timeout_s: float = 600) -> list[subprocess.CompletedProcess]:
    """Start every process before waiting for any, so they overlap as much as possible."""
    procs = [
        subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        for a in argvs
    ]
    results = []
    for argv, proc in zip(argvs, procs):
        out, err = proc.communicate(timeout=timeout_s)
        results.append(subprocess.CompletedProcess(argv, proc.returncode, out, err))
    return results


def lost_keys(alters: list[Alter], actual: dict[str, dict[str, str]]) -> list[Alter]:
    """Alters whose key is missing from (or differs in) the final state of their entity.
    When several processes write the same (user, key) the plan makes their values distinct;
    only the (user, key) pairs written exactly once are checked for their value."""
    writers: dict[tuple[str, str], int] = {}
    for a in alters:
        writers[(a.user, a.key)] = writers.get((a.user, a.key), 0) + 1
    lost = []
    for a in alters:
        got = actual.get(a.user, {}).get(a.key)
        if got is None or (writers[(a.user, a.key)] == 1 and got != a.value):
            lost.append(a)
    return lost


def zk_state(kazoo, users: set[str]) -> tuple[dict[str, dict[str, str]], list[str]]:
    """(configs per user, entity_path of every notification) read straight from ZooKeeper."""
    state = {}
    for user in users:
        data, _ = kazoo.get(f"/config/users/{user}")
        state[user] = json.loads(data)["config"]
    paths = []
    for name in kazoo.get_children("/config/changes"):
        data, _ = kazoo.get(f"/config/changes/{name}")
        paths.append(json.loads(data)["entity_path"])
    return state, paths
