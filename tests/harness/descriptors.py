"""Which test modules leave descriptors open in the pytest process, and what is still open once
the session is over.

Late in a full run the process has held more than 1024 descriptors (select() then fails), so
something leaks sockets or files. Counting /proc/self/fd around each test and summing the growth
per module names the culprits in the terminal summary. Session-scoped servers started by a
module's first test show up there too (their log files, clients): a few each while the session
runs is expected, but they are stopped at its end, so every descriptor open then that was not open
when the session started is a leak (``left_open``), and fails the run."""

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


def open_targets() -> dict[int, str]:
    """Descriptor -> what it refers to (a path, ``socket:[inode]``, ``pipe:[inode]``)."""
    targets = {}
    for name in _listdir_fds():
        try:
            targets[int(name)] = os.readlink(os.path.join(_FD_DIR, name))
        except OSError:  # closed meanwhile, or the listing's own descriptor
            continue
    return targets


def _listdir_fds() -> list[str]:
    try:
        return os.listdir(_FD_DIR)
    except OSError:
        return []


def left_open(at_start: dict[int, str], now: dict[int, str]) -> list[str]:
    """One line per descriptor open ``now`` that was not open (to the same thing) ``at_start``."""
    return [f"fd {fd} -> {target}" for fd, target in sorted(now.items()) if at_start.get(fd) != target]
