"""Whole-process `describe` of one entity on a local ZooKeeper: kconfigs vs real kafka-configs
2.8.2 vs `zkCli.sh get` of the same znode, in the same run; plus `kconfigs --help` import time.

Run: python benchmarks/bench_describe.py [--runs 15]
Needs .ci/setup-test-env (ZooKeeper package, Kafka 2.8.2 jars). kconfigs is measured as a user
installs it (README: `pip install .`): a regular, non-editable install of this checkout into a
venv under ~/.cache/kconfigs-bench, so the development environment's editable-install finder and
.pth hooks do not count against it.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import machine, write_section  # noqa: E402

from harness.java import java_command  # noqa: E402
from harness.zookeeper import ZooKeeperServer  # noqa: E402

ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"


def timed_runs(argv: list[str], runs: int, expect: str) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        if expect not in out.stdout:
            raise SystemExit(f"unexpected output from {argv[:3]}...: {out.stdout[-300:]} {out.stderr[-300:]}")
    return times


def summary(times: list[float]) -> str:
    return f"{statistics.median(times):.3f} | {min(times):.3f} | {max(times):.3f}"


def installed_kconfigs() -> str:
    """``kconfigs`` from a fresh non-editable install of this checkout (venv reused between runs)."""
    venv = Path.home() / ".cache" / "kconfigs-bench" / "venv"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--force-reinstall",
            "--no-deps",
            str(ROOT),
        ],
        check=True,
    )
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(ROOT)],
        check=True,
    )
    return str(venv / "bin" / "kconfigs")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    kconfigs = installed_kconfigs()
    with tempfile.TemporaryDirectory() as tmp:
        zk = ZooKeeperServer(Path(tmp))
        zk.start()
        try:
            subprocess.run(
                [
                    kconfigs,
                    "--zookeeper",
                    zk.hosts,
                    "--alter",
                    "--user",
                    "alice",
                    "--add-config",
                    "producer_byte_rate=1048576",
                ],
                check=True,
                capture_output=True,
            )
            ours = timed_runs(
                [kconfigs, "--zookeeper", zk.hosts, "--describe", "--user", "alice"], runs, "producer_byte_rate=1048576"
            )
            kafka = timed_runs(
                java_command(
                    "2.8.2", "kafka.admin.ConfigCommand", ["--zookeeper", zk.hosts, "--describe", "--user", "alice"]
                ),
                max(5, runs // 3),
                "producer_byte_rate=1048576",
            )
            zkcli = timed_runs(
                [ZKCLI, "-server", zk.hosts, "get", "/config/users/alice"], max(5, runs // 3), "producer_byte_rate"
            )
        finally:
            zk.stop()
    help_times = timed_runs([kconfigs, "--help"], runs, "Usage")
    venv_python = str(Path(kconfigs).with_name("python"))
    import_us = (
        subprocess.run([venv_python, "-X", "importtime", "-c", "import kconfigs.cli"], capture_output=True, text=True)
        .stderr.strip()
        .splitlines()[-1]
    )
    ratio_zkcli = statistics.median(ours) / statistics.median(zkcli)
    ratio_kafka = statistics.median(ours) / statistics.median(kafka)
    body = f"""## Whole-process describe of one entity

Command: `python benchmarks/bench_describe.py --runs {runs}` on {machine()},
Python {platform.python_version()}; local ZooKeeper (Debian package), same run for all three tools;
kconfigs from a regular `pip install .` into a fresh venv (as the README installs it).

| tool | median s | min s | max s |
|---|---|---|---|
| `kconfigs --zookeeper … --describe --user alice` | {summary(ours)} |
| `kafka.admin.ConfigCommand` 2.8.2 (same arguments) | {summary(kafka)} |
| `zkCli.sh -server … get /config/users/alice` | {summary(zkcli)} |
| `kconfigs --help` | {summary(help_times)} |

Ratios (median): kconfigs / kafka-configs = **{ratio_kafka:.3f}**, kconfigs / zkCli.sh = **{ratio_zkcli:.3f}**
(targets: ≤ 0.15 s median and ≤ 0.25× zkCli). Import of `kconfigs.cli` (`-X importtime`, last line):
`{import_us}`.
"""
    write_section("core-describe", body)
    print(body)


if __name__ == "__main__":
    main()
