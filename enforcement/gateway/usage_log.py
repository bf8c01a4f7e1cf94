"""JSON-lines usage log: what each entity consumed of each quota kind per window.

The schema is the contract in docs/usage-log.md (read by ``kconfigs analyze``): fields ts_ms,
window_ms, user, client_id, ip, kind, value, throttle_ms, quota. Windows are aligned to the epoch
clock (ts_ms = window start, UTC ms); idle windows are omitted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import defaultdict
from typing import Callable, TextIO

from kconfigs.clock import MONOTONIC

log = logging.getLogger("kconfigs.gateway")
UsageKey = tuple[str | None, str | None, str | None, str]  # user, client_id, ip, kind
#: (window start ms, kind, user, client_id, ip, value, throttle_ms), oldest window first
WindowTotals = tuple[int, str, str, str, str, float, float]
QuotaLookup = Callable[[str, "str | None", "str | None", "str | None"], "float | None"]


def open_usage_log(path: str) -> TextIO:
    """The usage log opened for appending. :raises UsageError: naming the log (not the
    listener that was being started when it was opened)."""
    from kconfigs.errors import UsageError

    try:
        return open(path, "a", encoding="utf-8")
    except OSError as err:
        raise UsageError(f"Cannot open the usage log {path}: {err.strerror}") from None


class UsageLog:
    """Accumulates usage per (user, client_id, ip, kind) and writes one line per entry per window."""

    def __init__(
        self, out: TextIO, window_ms: int, quota_lookup: QuotaLookup, clock_ms: Callable[[], int] | None = None
    ):
        self._out = out
        self.window_ms = window_ms
        self._quota_lookup = quota_lookup
        self._clock_ms = clock_ms or MONOTONIC.wall_ms  # windows are epoch-aligned: wall time
        self._window_start_ms = self._align(self._clock_ms())
        self._totals: dict[UsageKey, list[float]] = defaultdict(lambda: [0.0, 0.0])
        #: the native data plane records from its worker threads while the loop flushes
        self._lock = threading.RLock()
        #: totals kept elsewhere per window (the native data plane's), pulled before each write
        self.sources: list[Callable[[], list[WindowTotals]]] = []

    def _align(self, now_ms: int) -> int:
        return now_ms - now_ms % self.window_ms

    def record(
        self, kind: str, user: str | None, client_id: str | None, ip: str | None, value: float, throttle_ms: int
    ) -> None:
        """A usage sink for :class:`QuotaGate`."""
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
            self._out.write(json.dumps(line, separators=(",", ":")) + "\n")
        self._out.flush()
        self._totals.clear()

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
