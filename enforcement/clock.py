"""Clocks for the adapters. The enforcement core itself never reads time: it takes ``now_ms``.

The gateway passes ``MonotonicClock().now_ms()``; tests and replays use ``ManualClock``.
"""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class MonotonicClock:
    """Milliseconds from ``time.monotonic_ns`` (never goes backwards, unlike wall time)."""

    def now_ms(self) -> int:
        import time  # only adapters construct this clock; the core never imports time

        return time.monotonic_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to (Kafka's ``MockTime``)."""

    def __init__(self, start_ms: int = 0):
        self._now_ms = int(start_ms)

    def now_ms(self) -> int:
        return self._now_ms

    def sleep(self, duration_ms: int) -> None:
        """Advance by ``duration_ms`` (>= 0). :raises ValueError: for a negative duration."""
        if duration_ms < 0:
            raise ValueError("cannot sleep a negative duration")
        self._now_ms += int(duration_ms)

    def set(self, now_ms: int) -> None:
        self._now_ms = int(now_ms)
