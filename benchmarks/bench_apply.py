"""Bulk `kconfigs apply` of 10,000 entities on a local ZooKeeper vs `zkCli.sh` per entity.

Whole-process times: `kconfigs apply FILE --zookeeper …` creating every entity (the target is
≤ 10 s), re-applying with every value changed, and a re-apply that finds nothing to do; and
`zkCli.sh create` of one entity znode per process, measured on a sample and extrapolated to the
same number of entities (a full run would take hours; the sample size is in the table). zkCli is
given the easier job: one create per entity, without the `/config/changes` notification that
brokers need (kconfigs writes both, atomically, per entity).

Run: python benchmarks/bench_apply.py [--entities 10000] [--zkcli-sample 50]
Needs the Debian zookeeper package (.ci/setup-test-env).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness.zookeeper import ZooKeeperServer  # noqa: E402
from _results import write_section  # noqa: E402

ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"


def quota_file(path: Path, entities: int, bump: int) -> None:
    """A third users, a third client-ids, a third (user, client-id) pairs."""
    shapes = ('{{ user = "user-{i}" }}', '{{ client-id = "client-{i}" }}', '{{ user = "team-{t}", client-id = "app-{i}" }}')
    lines = []
    for i in range(entities):
        entity = shapes[i % 3].format(i=i, t=i % 100)
        lines += ["[[quota]]", f"entity = {entity}", f"producer_byte_rate = {1048576 + i + bump}", ""]
    path.write_text("\n".join(lines))


def timed(argv: list[str], expect_code: int = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if done.returncode != expect_code:
        raise SystemExit(f"{argv[:2]} exited {done.returncode}: {done.stderr[-500:]}")
    return elapsed


def zkcli_sample(hosts: str, sample: int) -> list[float]:
    data = '{"version":1,"config":{"producer_byte_rate":"1048576"}}'
    subprocess.run([ZKCLI, "-server", hosts, "create", "/zkcli", ""], capture_output=True)
    return [timed([ZKCLI, "-server", hosts, "create", f"/zkcli/user-{i}", data]) for i in range(sample)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entities", type=int, default=10000)
    parser.add_argument("--zkcli-sample", type=int, default=50)
    args = parser.parse_args()
    kconfigs = shutil.which("kconfigs") or sys.exit("kconfigs is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        create_file, change_file = Path(tmp) / "create.toml", Path(tmp) / "change.toml"
        quota_file(create_file, args.entities, 0)
        quota_file(change_file, args.entities, 1)
        zk = ZooKeeperServer(Path(tmp) / "zk")
        zk.start()
        try:
            base = ["--zookeeper", zk.hosts + "/bench"]
            subprocess.run([kconfigs, "export", *base], capture_output=True)  # warm the page cache
            create_s = timed([kconfigs, "apply", str(create_file), *base])
            change_s = timed([kconfigs, "apply", str(change_file), *base])
            noop_s = timed([kconfigs, "apply", str(change_file), *base])
            diff_s = timed([kconfigs, "diff", str(change_file), *base])
            zkcli = zkcli_sample(zk.hosts, args.zkcli_sample)
        finally:
            zk.stop()
        embedded = ["--store", str(Path(tmp) / "embedded.db")]
        sqlite_s = (timed([kconfigs, "apply", str(create_file), *embedded]),
                    timed([kconfigs, "apply", str(change_file), *embedded]))
    write_section("apply", report(args, create_s, change_s, noop_s, diff_s, zkcli, sqlite_s))


def report(args, create_s: float, change_s: float, noop_s: float, diff_s: float, zkcli: list[float],
           sqlite_s: tuple[float, float]) -> str:
    per_entity = statistics.median(zkcli)
    zkcli_total = per_entity * args.entities
    load = os.getloadavg()[0]
    return f"""## Bulk apply of {args.entities:,} entities on ZooKeeper (issue 7)

Command: `python benchmarks/bench_apply.py --entities {args.entities} --zkcli-sample {args.zkcli_sample}` on
{platform.machine()}, {os.cpu_count()} cores (1-min load average {load:.1f} at the end: the machine is shared),
Python {platform.python_version()}; local ZooKeeper (Debian package). Whole processes, one run each.
Entities: a third users, a third client-ids, a third (user, client-id) pairs under 100 users.

| step | seconds |
|---|---|
| `kconfigs apply` creating {args.entities:,} entities (each: multi-op with its notification) | {create_s:.2f} |
| `kconfigs apply` changing every value (one read per entity for the plan, version-checked writes) | {change_s:.2f} |
| `kconfigs apply` again, nothing to do | {noop_s:.2f} |
| `kconfigs diff`, in sync | {diff_s:.2f} |
| embedded store: `kconfigs apply --store …` creating / changing the same {args.entities:,} entities | {sqlite_s[0]:.2f} / {sqlite_s[1]:.2f} |
| `zkCli.sh create` per entity: median of {len(zkcli)} runs (min {min(zkcli):.2f}, max {max(zkcli):.2f}) | {per_entity:.2f} |
| `zkCli.sh` for {args.entities:,} entities, **extrapolated** from that sample (no notifications) | {zkcli_total:,.0f} |

Ratio: kconfigs bulk create / zkCli.sh per entity (extrapolated) = **{create_s / zkcli_total:.5f}**
(≈ {zkcli_total / create_s:,.0f}× faster). Target: create of 10,000 entities ≤ 10 s.
"""


if __name__ == "__main__":
    main()
