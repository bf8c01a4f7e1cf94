"""Which test modules leave descriptors open in the pytest process.

Late in a full run the process has held more than 1024 descriptors (select() then fails), so
something leaks sockets or files. Counting /proc/self/fd around each test and summing the growth
per module names the culprits in the terminal summary. Session-scoped servers started by a
module's first test show up there too (their log files, clients): a few each is expected."""

from __future__ import annotations

import os
from collections import Counter

_FD_DIR = "/proc/self/fd"
GROWTH: Counter[str] = Counter()


def open_descriptors() -> int:
    try:
        return len(os.listdir(_FD_DIR))
    except OSError:  # not Linux: nothing to count
        return 0


def record(module: str, before: int, after: int) -> None:
    GROWTH[module] += after - before


def summary_lines(top: int = 8) -> list[str]:
    """The modules that left the most descriptors open, and the count at the end."""
    leaking = [(module, grown) for module, grown in GROWTH.most_common(top) if grown > 0]
    lines = [f"{grown:+6d}  {module}" for module, grown in leaking]
    lines.append(f"{open_descriptors():6d}  descriptors open at the end of the session")
    return lines
