"""The one clock: every adapter that reads time or waits (retries, stores, the gateway) takes a
``Clock``; the pure core never reads time and gets ``now_ms`` passed in instead.

``MonotonicClock`` is the real one; tests and replays use ``ManualClock``, which moves only when
told to (Kafka's ``MockTime``), so nothing patches ``time``.
"""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds on a clock that never goes backwards (not wall time)."""
        ...

    def sleep(self, duration_ms: float) -> None:
        """Wait ``duration_ms`` (>= 0)."""
        ...

    def wall_ms(self) -> int:
        """Milliseconds since the epoch (wall time: for timestamps others read, never for intervals)."""
        ...


class MonotonicClock:
    """Milliseconds from ``time.monotonic_ns`` (never goes backwards, unlike wall time)."""

    def now_ms(self) -> int:
        import time  # only adapters construct this clock; the core never imports time

        return time.monotonic_ns() // 1_000_000

    def sleep(self, duration_ms: float) -> None:
        import time

        time.sleep(max(0.0, duration_ms) / 1000)

    def wall_ms(self) -> int:
        import time

        return time.time_ns() // 1_000_000


MONOTONIC = MonotonicClock()


class ManualClock:
    """A clock that moves only when told to (Kafka's ``MockTime``)."""

    def __init__(self, start_ms: int = 0):
        self._now_ms = int(start_ms)

    def now_ms(self) -> int:
        return self._now_ms

    def sleep(self, duration_ms: float) -> None:
        """Advance by ``duration_ms`` (>= 0). :raises ValueError: for a negative duration."""
        if duration_ms < 0:
            raise ValueError("cannot sleep a negative duration")
        self._now_ms += int(duration_ms)

    def wall_ms(self) -> int:
        """The manual time doubles as wall time (epoch milliseconds when started from one)."""
        return self._now_ms

    def set(self, now_ms: int) -> None:
        self._now_ms = int(now_ms)
