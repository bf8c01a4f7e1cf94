"""The README's ``sh`` blocks run as written, in order, so the README cannot drift from the tool.

Every command line of every ``sh`` block is run through bash in one scratch directory, with
``kconfigs`` on PATH and the README's example hosts pointed at real servers (``zk1:2181/kafka``: a
chroot on the test ZooKeeper; ``broker1:9092``: the Kafka 4 KRaft broker). A ``# ...`` comment line
right under a command is output that command must print. The whole README runs twice: once with
nothing else set (commands that name no server use the embedded store), and once with
``KCONFIGS_ZOOKEEPER`` naming another chroot (the same commands then use ZooKeeper).

Only lines that set up the machine are not run (installing, the test suite itself) and ``kconfigs
serve``, which runs until stopped (tests/integration/test_gateway_serve.py runs it). The analyze
block runs in its own test: it starts Spark.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
NOT_RUN = (  # (prefix, why)
    ("python3 -m venv", "sets up the machine"),
    ("pip install", "sets up the machine"),
    ("pipx install", "sets up the machine"),
    ("bash .ci/test", "the test suite itself"),
    ("kconfigs serve", "runs until stopped (test_gateway_serve.py runs it)"),
    ("kconfigs top", "reads brokers' exporters, gateways and Prometheus (test_top.py runs it against each)"),
    ("PYSPARK_PYTHON=", "needs a Spark cluster (test_analyze_spark_cluster.py runs the job on one)"),
    # the same command line, in a fresh kconfigs home: run twice it would cost the suite a minute
    ("kconfigs analyze prepare", "test_analyze_small_runs.py runs it as written for its prepared home"),
)
ANALYZE = "kconfigs analyze"


@dataclass
class Command:
    line: str
    expected: list[str] = field(default_factory=list)


def readme_commands(text: str) -> list[Command]:
    """The command lines of the ``sh`` blocks, continuations joined, each with the ``# ...``
    lines right under it (its expected output); other comments and blank lines are dropped."""
    commands: list[Command] = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M):
        last: Command | None = None
        for line in block.replace("\\\n", " ").splitlines():
            if not line.strip():
                last = None
            elif line.startswith("#"):
                if last is not None:
                    last.expected.append(line[1:].strip())
            else:
                last = Command(re.sub(r"\s+", " ", line).strip())
                commands.append(last)
    return commands


def _not_run(line: str) -> bool:
    return any(line.startswith(prefix) for prefix, _ in NOT_RUN)


def test_readme_parsing_keeps_commands_outputs_and_order():
    commands = readme_commands("```sh\n# intro\nkconfigs a \\\n   --b\n# out 1\n\n# note\nkconfigs c  # inline\n```\n")
    assert commands == [Command("kconfigs a --b", ["out 1"]), Command("kconfigs c # inline", [])]


def test_every_readme_block_is_covered():
    """A new block is run by default; only the NOT_RUN set-up lines are left out."""
    lines = [c.line for c in readme_commands(README.read_text(encoding="utf-8"))]
    assert len(lines) > 25
    assert all(line.startswith(("kconfigs ", "printf ")) or _not_run(line) for line in lines), lines


@pytest.fixture
def readme_env(tmp_path, zk_connect, zk_client, kraft_broker):
    """A scratch directory and environment; the shared broker's default-user quotas are saved,
    cleared for the run, and put back."""
    zk_client.ensure_path("/kafka/brokers")  # zk1:2181/kafka: a Kafka cluster's chroot
    zk_client.ensure_path("/default-store/brokers")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "kconfigs"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kconfigs "$@"\n')
    wrapper.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_")}
    env.update(
        PATH=f"{bin_dir}:{env['PATH']}",
        KCONFIGS_HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        NO_COLOR="1",
    )
    work = tmp_path / "work"
    work.mkdir()
    hosts = {"zk1:2181/kafka": f"{zk_connect}/kafka", "broker1:9092": kraft_broker.bootstrap}
    saved = _default_user_quotas(kraft_broker.bootstrap, None)
    try:
        yield work, env, hosts, f"{zk_connect}/default-store"
    finally:
        _default_user_quotas(kraft_broker.bootstrap, saved)


def _default_user_quotas(bootstrap: str, restore: dict | None) -> dict:
    """The default user's quotas on the broker; with ``restore``, set them to exactly that."""
    from kconfigs.model import DEFAULT, QuotaEntity
    from kconfigs.stores.factory import StoreOptions, open_store

    store = open_store(StoreOptions(bootstrap_server=bootstrap))
    try:
        entity = QuotaEntity(user=DEFAULT)
        before = {r.entity: dict(r.configs) for r in store.describe(_exact(entity))}.get(entity, {})
        store.alter(entity, lambda current: dict(restore or {}))
        return before
    finally:
        store.close()


def _exact(entity):
    from kconfigs.model import EntityFilter, FilterComponent, Match

    return EntityFilter(tuple(FilterComponent(t, Match.DEFAULT) for t in entity.components()), strict=True)


def _run_readme(work: Path, env: dict, hosts: dict, only_analyze: bool) -> list[str]:
    """Run the commands in order; returns one message per failure (all are run: later commands
    rely on earlier ones, so the first failure is the one to read)."""
    failures = []
    for command in readme_commands(README.read_text(encoding="utf-8")):
        if _not_run(command.line) or command.line.startswith(ANALYZE) != only_analyze:
            continue
        line = command.line
        for example, real in hosts.items():
            line = line.replace(example, real)
        proc = subprocess.run(
            ["bash", "-c", line],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        missing = [e for e in command.expected if e not in proc.stdout.splitlines()]
        if proc.returncode != 0 or missing:
            failures.append(
                f"{command.line!r}: exit {proc.returncode}, stderr {proc.stderr.strip()[-400:]!r}, "
                f"expected lines missing {missing}, stdout {proc.stdout[-400:]!r}"
            )
    return failures


@pytest.mark.parametrize("default_store", ["embedded", "zookeeper"])
def test_readme_commands_run_as_written_in_order(readme_env, default_store):
    work, env, hosts, zk_default = readme_env
    if default_store == "zookeeper":
        env = {**env, "KCONFIGS_ZOOKEEPER": zk_default}
    assert _run_readme(work, env, hosts, only_analyze=False) == []
    if default_store == "embedded":
        assert (Path(env["KCONFIGS_HOME"]) / "quotas.db").is_file()
    else:
        assert not (Path(env["KCONFIGS_HOME"]) / "quotas.db").exists()  # every default went to ZooKeeper


def test_readme_analyze_block_runs_as_written_in_order(readme_env):
    pytest.importorskip("pyspark")
    work, env, hosts, _ = readme_env
    assert _run_readme(work, env, hosts, only_analyze=True) == []
    assert (work / "proposed.toml").is_file() and (work / "report.html").is_file()
