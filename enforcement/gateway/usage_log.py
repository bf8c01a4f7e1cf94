"""JSON-lines usage log: what each entity consumed of each quota kind per window.

The schema is the contract in docs/usage-log.md (read by ``kconfigs analyze``): fields ts_ms,
window_ms, user, client_id, ip, kind, value, throttle_ms, quota. Windows are aligned to the epoch
clock (ts_ms = window start, UTC ms); idle windows are omitted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections import defaultdict
from typing import Callable, TextIO

from kconfigs.clock import MONOTONIC

log = logging.getLogger("kconfigs.gateway")
UsageKey = tuple[str | None, str | None, str | None, str]  # user, client_id, ip, kind
#: (window start ms, kind, user, client_id, ip, value, throttle_ms), oldest window first
WindowTotals = tuple[int, str, str, str, str, float, float]
QuotaLookup = Callable[[str, "str | None", "str | None", "str | None"], "float | None"]


def open_usage_log(path: str) -> "AppendedFile":
    """The usage log opened for appending. :raises UsageError: naming the log (not the
    listener that was being started when it was opened)."""
    from kconfigs.errors import UsageError

    try:
        return AppendedFile(path)
    except OSError as err:
        raise UsageError(f"Cannot open the usage log {path}: {err.strerror}") from None


class AppendedFile:
    """A file appended to by path, not by descriptor: when the path no longer names the open file
    (logrotate renamed or deleted it) the next write reopens it, so the lines land in the file
    `kconfigs analyze` is given instead of in a renamed or deleted one; one ``stat`` per write."""

    def __init__(self, path: str):
        self.path = path
        self._file: TextIO | None = open(path, "a", encoding="utf-8")

    def write(self, text: str) -> None:
        """Append and flush. :raises OSError: (disk full, directory gone...); the next write
        tries again, reopening the path if it has to."""
        if self._file is None or self._rotated(self._file):
            self.close()
            self._file = open(self.path, "a", encoding="utf-8")
        try:
            self._file.write(text)
            self._file.flush()
        except OSError:
            self.close()  # the unwritten part goes with it: a lost window is not written later
            raise

    def _rotated(self, file: TextIO) -> bool:
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            return True
        opened = os.fstat(file.fileno())
        return (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError:  # its buffered lines could not be written either: already counted lost
                pass


class UsageLog:
    """Accumulates usage per (user, client_id, ip, kind) and writes one line per entry per window."""

    def __init__(
        self,
        out: TextIO | AppendedFile,
        window_ms: int,
        quota_lookup: QuotaLookup,
        clock_ms: Callable[[], int] | None = None,
        lost: Callable[[int], None] = lambda count: None,
    ):
        """``lost``: told how many lines a failed write dropped (the gateway's metric)."""
        self._out = out
        self._lost = lost
        self.window_ms = window_ms
        self._quota_lookup = quota_lookup
        self._clock_ms = clock_ms or MONOTONIC.wall_ms  # windows are epoch-aligned: wall time
        self._window_start_ms = self._align(self._clock_ms())
        self._totals: dict[UsageKey, list[float]] = defaultdict(lambda: [0.0, 0.0])
        #: the native data plane records from its worker threads while the loop flushes
        self._lock = threading.RLock()
        #: totals kept elsewhere per window (the native data plane's), pulled before each write
        self.sources: list[Callable[[], list[WindowTotals]]] = []
        #: lines that could not be written (disk full...), since start
        self.lost_lines = 0
        self._failing = False
        #: (kind, user, client_id) -> the fleet's total rate of that entity, for a gateway in a fleet
        self.fleet_rate_lookup: Callable[[str, str | None, str | None], float | None] | None = None

    def _align(self, now_ms: int) -> int:
        return now_ms - now_ms % self.window_ms

    def record(
        self, kind: str, user: str | None, client_id: str | None, ip: str | None, value: float, throttle_ms: int
    ) -> None:
        """Add usage to the current window by hand (the gateway's usage arrives through ``sources``)."""
        with self._lock:
            self.roll(self._clock_ms())
            totals = self._totals[(user, client_id, ip, kind)]
            totals[0] += value
            totals[1] += throttle_ms

    def roll(self, now_ms: int) -> None:
        """Write the finished window if ``now_ms`` is past it."""
        with self._lock:
            self._pull()
            self._roll_to(self._align(now_ms))

    def _roll_to(self, start: int) -> None:
        if start > self._window_start_ms:
            self._flush()
            self._window_start_ms = start

    def _pull(self) -> None:
        """Add the sources' totals to their windows (a late one to the current window)."""
        for source in self.sources:
            for start, kind, user, client_id, ip, value, throttle_ms in source():
                self._roll_to(start)
                totals = self._totals[(user, client_id, ip, kind)]
                totals[0] += value
                totals[1] += throttle_ms

    def flush(self) -> None:
        with self._lock:
            self._pull()
            self._flush()

    def _flush(self) -> None:
        lines = []
        for (user, client_id, ip, kind), (value, throttle_ms) in sorted(self._totals.items(), key=_sort_key):
            if value == 0 and throttle_ms == 0:
                continue
            line = {
                "ts_ms": self._window_start_ms,
                "window_ms": self.window_ms,
                "user": user,
                "client_id": client_id,
                "ip": ip,
                "kind": kind,
                "value": _number(value),
                "throttle_ms": _number(throttle_ms),
                "quota": self._quota_lookup(kind, user, client_id, ip),
            }
            if self.fleet_rate_lookup is not None:
                line["fleet_rate"] = self.fleet_rate_lookup(kind, user, client_id)
            lines.append(json.dumps(line, separators=(",", ":")) + "\n")
        self._totals.clear()
        if lines:
            self._write("".join(lines), len(lines))

    def _write(self, text: str, count: int) -> None:
        """One window's lines in one write. A failed write loses that window, said once per run of
        failures (and counted), never raised: it would reach the request being charged."""
        try:
            self._out.write(text)
            self._out.flush()
        except OSError as err:
            self.lost_lines += count
            self._lost(count)
            if not self._failing:
                log.warning("usage log: cannot write (%s): windows are lost until it can", err.strerror or err)
            self._failing = True
            return
        if self._failing:
            log.info("usage log: writing again (%d lines lost meanwhile)", self.lost_lines)
            self._failing = False

    def close(self) -> None:
        self._out.close()

    async def run_periodic_flush(self) -> None:
        """Close windows even when traffic stops (so the last busy window is written)."""
        while True:
            await asyncio.sleep(self.window_ms / 1000)
            self.roll(self._clock_ms())


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _sort_key(item):
    (user, client_id, ip, kind), _ = item
    return (kind, user or "", client_id or "", ip or "")
