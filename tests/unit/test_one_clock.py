"""Time is read through one clock (``kconfigs.clock``): a second way to read it is where a test
cannot reach (no ManualClock) and where wall and monotonic time get mixed up."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kconfigs", "enforcement", "spark_analysis")
# asyncio's own deadlines use loop.time(), the event loop's clock, which is not read here
DIRECT_READ = re.compile(r"\btime\.(time|time_ns|monotonic|monotonic_ns|perf_counter)\(|\bdatetime\.(now|utcnow)\(")


def direct_reads() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "kconfigs" / "clock.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if DIRECT_READ.search(line.split("#", 1)[0]):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_time_is_read_only_through_the_one_clock():
    assert direct_reads() == []


def test_the_check_sees_a_direct_read():
    assert DIRECT_READ.search("started = time.monotonic()")
    assert DIRECT_READ.search("stamp = int(time.time() * 1000)")
    assert not DIRECT_READ.search("deadline = loop.time() + 5")
