"""No-lost-updates figures (docs/RELIABILITY.md section 1):
concurrent alters of different keys of the same entities, kconfigs vs real
kafka-configs 2.8.2 (last-writer-wins), each on its own chroot of one local ZooKeeper.

Run: python benchmarks/reliability_lost_updates.py [--processes 50 --entities 10 --rounds 3]
Writes the "lost-updates" section of docs/RELIABILITY.md.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

from lost_updates import KAFKA_USER_KEYS, kconfigs_argv, lost_keys, plan, run_all, zk_state  # noqa: E402

from harness.java import java_command  # noqa: E402
from harness.zookeeper import ZooKeeperServer  # noqa: E402

DOC = ROOT / "docs" / "RELIABILITY.md"


def kafka_argv(connect: str, alter) -> list[str]:
    return java_command(
        "2.8.2",
        "kafka.admin.ConfigCommand",
        [
            "--zookeeper",
            connect,
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            alter.user,
            "--add-config",
            f"{alter.key}={alter.value}",
        ],
    )


def one_round(zk: ZooKeeperServer, tool: str, processes: int, entities: int, round_no: int) -> dict:
    chroot = f"/lost-{tool}-{round_no}"
    admin = zk.admin_client()
    admin.ensure_path(chroot)
    alters = plan(processes, entities, KAFKA_USER_KEYS)  # keys both tools accept
    connect = zk.hosts + chroot
    argvs = [
        kconfigs_argv(["--zookeeper", connect], a) if tool == "kconfigs" else kafka_argv(connect, a) for a in alters
    ]
    start = time.perf_counter()
    results = run_all(argvs)
    elapsed = time.perf_counter() - start
    kazoo = zk.kazoo(chroot)
    state, notified = zk_state(kazoo, {a.user for a in alters})
    kazoo.stop()
    lost = lost_keys(alters, state)
    expected = collections.Counter(f"users/{a.user}" for a in alters)
    return {
        "failed": sum(r.returncode != 0 for r in results),
        "lost": len(lost),
        "notifications_ok": collections.Counter(notified) == expected,
        "seconds": elapsed,
    }


def write_doc(section: str) -> None:
    text = (
        DOC.read_text()
        if DOC.exists()
        else "# Reliability\n\nReliability figures, each section written by the script it names.\n"
    )
    start, end = "<!-- lost-updates -->", "<!-- /lost-updates -->"
    block = f"{start}\n{section.rstrip()}\n{end}"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    DOC.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=50)
    parser.add_argument("--entities", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        zk = ZooKeeperServer(Path(tmp))
        zk.start()
        try:
            for tool in ("kconfigs", "kafka-configs 2.8.2"):
                for round_no in range(args.rounds):
                    result = one_round(
                        zk, "kconfigs" if tool == "kconfigs" else "kafka", args.processes, args.entities, round_no
                    )
                    rows.append((tool, round_no + 1, result))
                    print(tool, round_no + 1, result, flush=True)
        finally:
            zk.shutdown()
    table = "\n".join(
        f"| {tool} | {n} | {r['failed']} | {r['lost']} of {args.processes} | "
        f"{'yes' if r['notifications_ok'] else 'no'} | {r['seconds']:.1f} |"
        for tool, n, r in rows
    )
    write_doc(f"""## 1. No lost updates under concurrent alters

Command: `python benchmarks/reliability_lost_updates.py --processes {args.processes} --entities {args.entities} --rounds {args.rounds}`.
{args.processes} processes start at once; process p sets one of Kafka's four user quota keys on user
`user-(p mod {args.entities})`, so each entity is altered by {args.processes // args.entities} processes at the same time, writing
different keys. Afterwards every (user, key) written must be present, and every alter must
have left exactly one `/config/changes` notification for its entity.

| tool | round | failed commands | keys lost | one notification per alter | wall s |
|---|---|---|---|---|---|
{table}

kafka-configs reads the znode, merges, and writes it back with `setData(version -1)` (last writer
wins) and then writes the notification separately; concurrent alters of one entity therefore drop
each other's keys. kconfigs does the read-merge-write as a compare-and-set inside one ZooKeeper
multi-op with the notification, retrying on a version conflict, so nothing is lost. The same
property is asserted on every CI run by `tests/integration/test_reliability_lost_updates.py`
(ZooKeeper and the embedded store).
""")


if __name__ == "__main__":
    main()
