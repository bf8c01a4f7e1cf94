"""Whole-process describe and alter of one entity, as scripts call them once per entity:
kconfigs on the embedded store, on ZooKeeper and on a KRaft cluster, beside `zkCli.sh get` of the
same znode and the real kafka-configs (2.8.2 on ZooKeeper, the suite's 4.x on KRaft), in the same
run and alternating (every round runs each command once); plus the subcommands and a Tab press.

Run: python benchmarks/bench_describe.py [--runs 15]
Needs .ci/setup-test-env (ZooKeeper package, Kafka jars). kconfigs is measured as a user
installs it (README: `pip install .`): a regular, non-editable install of this checkout into a
venv under ~/.cache/kconfigs-bench, so the development environment's editable-install finder and
.pth hooks do not count against it.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import machine, write_section  # noqa: E402

from harness.brokers import KraftBroker  # noqa: E402
from harness.java import config_command_class, java_command  # noqa: E402
from harness.versions import KAFKA_4_VERSION, KAFKA_ZK_TOOL_VERSION  # noqa: E402
from harness.zookeeper import ZooKeeperServer  # noqa: E402

ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"
#: the issue's bound: a ZooKeeper describe at or under this share of zkCli.sh's time
ZKCLI_RATIO_TARGET = 0.25


@dataclass
class Command:
    """One row: an argv run ``runs`` times, its output checked each time."""

    label: str
    argv: list[str]
    expect: str
    env: dict[str, str] = field(default_factory=lambda: USER_ENV)
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)

    def run_once(self) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        out = subprocess.run(self.argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=self.env)
        self.wall_s.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu_s.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        if self.expect not in out.stdout:
            raise SystemExit(f"{self.label}: unexpected output: {out.stdout[-300:]} {out.stderr[-300:]}")

    def row(self) -> str:
        wall = self.wall_s
        return (
            f"| {self.label} | {statistics.median(wall):.3f} | {min(wall):.3f} | {max(wall):.3f} "
            f"| {statistics.median(self.cpu_s):.3f} |"
        )


#: as a user's shell has it: with PYTHONDONTWRITEBYTECODE set (as some CI and sandbox shells do)
#: pip writes no .pyc at install and every run compiles each module it imports from source
USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def installed_kconfigs() -> str:
    """``kconfigs`` from a fresh non-editable install of this checkout (venv reused between runs)."""
    venv = Path.home() / ".cache" / "kconfigs-bench" / "venv"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--compile"]
    subprocess.run([*pip, "--force-reinstall", "--no-deps", str(ROOT)], check=True, env=USER_ENV)
    subprocess.run([*pip, str(ROOT)], check=True, env=USER_ENV)
    return str(venv / "bin" / "kconfigs")


def alternating(commands: list[Command], runs: int) -> None:
    for command in commands:  # one warm-up each: page cache, JVM class-data archives
        command.run_once()
        command.wall_s.clear()
        command.cpu_s.clear()
    for _ in range(runs):
        for command in commands:
            command.run_once()


def embedded_commands(kconfigs: str, home: Path) -> list[Command]:
    env = {**USER_ENV, "KCONFIGS_HOME": str(home), "XDG_CONFIG_HOME": str(home / "no-config")}
    subprocess.run(
        [kconfigs, "--alter", "--user", "alice", "--add-config", "producer_byte_rate=1048576"], env=env, check=True
    )
    alter = ["--alter", "--user", "alice", "--add-config", "consumer_byte_rate=2097152"]
    return [
        Command(
            "embedded: `kconfigs --describe --user alice`", [kconfigs, "--describe", "--user", "alice"], "alice", env
        ),
        Command("embedded: `kconfigs --alter --user alice --add-config …`", [kconfigs, *alter], "Completed", env),
        Command("embedded: `kconfigs describe --user alice`", [kconfigs, "describe", "--user", "alice"], "alice", env),
        Command(
            "embedded: `kconfigs alter --user alice --set …`",
            [kconfigs, "alter", "--user", "alice", "--set", "consumer_byte_rate=2097152"],
            "Completed",
            env,
        ),
    ]


def zookeeper_commands(kconfigs: str, hosts: str) -> list[Command]:
    subprocess.run(
        [kconfigs, "--zookeeper", hosts, "--alter", "--user", "alice", "--add-config", "producer_byte_rate=1048576"],
        check=True,
        capture_output=True,
        env=USER_ENV,
    )
    describe = ["--zookeeper", hosts, "--describe", "--user", "alice"]
    alter = ["--zookeeper", hosts, "--alter", "--user", "alice", "--add-config", "consumer_byte_rate=2097152"]
    config_command = config_command_class(KAFKA_ZK_TOOL_VERSION)
    return [
        Command("ZooKeeper: `kconfigs --zookeeper … --describe --user alice`", [kconfigs, *describe], "alice"),
        Command(
            "ZooKeeper: `zkCli.sh -server … get /config/users/alice`",
            [ZKCLI, "-server", hosts, "get", "/config/users/alice"],
            "producer_byte_rate",
        ),
        Command(
            f"ZooKeeper: kafka-configs {KAFKA_ZK_TOOL_VERSION} --describe",
            java_command(KAFKA_ZK_TOOL_VERSION, config_command, describe),
            "alice",
        ),
        Command("ZooKeeper: `kconfigs --zookeeper … --alter …`", [kconfigs, *alter], "Completed"),
        Command(
            f"ZooKeeper: kafka-configs {KAFKA_ZK_TOOL_VERSION} --alter",
            java_command(KAFKA_ZK_TOOL_VERSION, config_command, alter),
            "Completed",
        ),
        Command(
            "ZooKeeper: `kconfigs describe --zookeeper … --user alice`",
            [kconfigs, "describe", "--zookeeper", hosts, "--user", "alice"],
            "alice",
        ),
    ]


def kraft_commands(kconfigs: str, bootstrap: str) -> list[Command]:
    describe = ["--bootstrap-server", bootstrap, "--describe", "--user", "alice"]
    alter = [
        "--bootstrap-server",
        bootstrap,
        "--alter",
        "--user",
        "alice",
        "--add-config",
        "producer_byte_rate=1048576",
    ]
    subprocess.run([kconfigs, *alter], check=True, capture_output=True, env=USER_ENV)
    config_command = config_command_class(KAFKA_4_VERSION)
    return [
        Command("KRaft: `kconfigs --bootstrap-server … --describe --user alice`", [kconfigs, *describe], "alice"),
        Command(
            f"KRaft: kafka-configs {KAFKA_4_VERSION} --describe",
            java_command(KAFKA_4_VERSION, config_command, describe),
            "alice",
        ),
        Command("KRaft: `kconfigs --bootstrap-server … --alter …`", [kconfigs, *alter], "Completed"),
        Command(
            f"KRaft: kafka-configs {KAFKA_4_VERSION} --alter",
            java_command(KAFKA_4_VERSION, config_command, alter),
            "Completed",
        ),
    ]


def completion_commands(kconfigs: str) -> list[Command]:
    def tab(words: str) -> dict[str, str]:
        return {**USER_ENV, "_KCONFIGS_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": "1"}

    return [
        Command("Tab: `kconfigs de<Tab>`", [kconfigs], "describe", tab("kconfigs de")),
        Command("`kconfigs --help`", [kconfigs, "--help"], "Usage"),
    ]


def median_of(commands: list[Command], label_start: str) -> float:
    return statistics.median(next(c for c in commands if c.label.startswith(label_start)).wall_s)


def render(commands: list[Command], runs: int, load_before: float, load_after: float) -> str:
    ours = median_of(commands, "ZooKeeper: `kconfigs --zookeeper … --describe")
    zkcli = median_of(commands, "ZooKeeper: `zkCli.sh")
    ratio = ours / zkcli
    verdict = "met" if ratio <= ZKCLI_RATIO_TARGET else "not met"
    rows = "\n".join(command.row() for command in commands)
    return f"""## Whole-process describe and alter of one entity

Command: `python benchmarks/bench_describe.py --runs {runs}` on {machine()},
Python {platform.python_version()}; load average {load_before:.1f} before / {load_after:.1f} after.
Every round runs each command once, in the order below ({runs} rounds after one warm-up each);
a local ZooKeeper (Debian package) and a KRaft broker (Kafka {KAFKA_4_VERSION}) from the test
harness; kconfigs from a regular `pip install .` into a venv (as the README installs it); the
kafka-configs rows are the real ConfigCommand with the harness' JVM flags. CPU is user + system
time of the process and its children. PYTHONDONTWRITEBYTECODE is unset for the install and the
runs, as in a user's shell (with it set, pip writes no .pyc and every call compiles its modules).

| command | median s | min s | max s | median CPU s |
|---|---|---|---|---|
{rows}

ZooKeeper describe: kconfigs / zkCli.sh = **{ratio:.3f}** (median; target ≤ {ZKCLI_RATIO_TARGET}x: {verdict}).
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    kconfigs = installed_kconfigs()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        zk, kraft = ZooKeeperServer(work / "zk"), KraftBroker(KAFKA_4_VERSION, work / "kraft")
        zk.start()
        kraft.start()
        try:
            commands = [
                *embedded_commands(kconfigs, work / "home"),
                *zookeeper_commands(kconfigs, zk.hosts),
                *kraft_commands(kconfigs, kraft.bootstrap),
                *completion_commands(kconfigs),
            ]
            alternating(commands, runs)
        finally:
            kraft.stop()
            zk.stop()
    body = render(commands, runs, load_before, os.getloadavg()[0])
    write_section("core-describe", body)
    print(body)


if __name__ == "__main__":
    main()
