"""Kafka's ``TokenBucket`` stat, used for ``controller_mutation_rate`` (KIP-599).

``burst = N * Wsec * Q``. ``tokens`` and ``lastUpdateMs`` both start at 0, so the first refill at
a real epoch time fills the bucket to the burst (the bucket "starts full"); with a clock starting
near 0 it starts nearly empty, exactly like Kafka. ``record(v)`` refills, then subtracts; tokens
may go negative (one strict request may overdraw). A violation is ``measure() < 0``.
"""

from __future__ import annotations


class TokenBucket:
    """Token bucket for one quota sensor. Quota changes keep the tokens (Kafka swaps the config only).

    :param samples: ``controller.quota.window.num``
    :param window_ms: ``controller.quota.window.size.seconds * 1000``
    :param quota_per_sec: the bound Q (permits per second)
    """

    __slots__ = ("samples", "window_ms", "quota_per_sec", "tokens", "last_update_ms")

    def __init__(self, samples: int, window_ms: int, quota_per_sec: float):
        self.samples = samples
        self.window_ms = window_ms
        self.quota_per_sec = quota_per_sec
        self.tokens = 0.0
        self.last_update_ms = 0

    @property
    def burst(self) -> float:
        # Kafka: config.samples() * convert(timeWindowMs, SECONDS) * quota.bound()
        return self.samples * (self.window_ms / 1000.0) * self.quota_per_sec

    def _refill(self, now_ms: int) -> None:
        self.tokens = min(self.burst, self.tokens + self.quota_per_sec * ((now_ms - self.last_update_ms) / 1000.0))
        self.last_update_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """Refill to ``now_ms`` and return the tokens left (negative = throttled)."""
        self._refill(now_ms)
        return self.tokens

    def record(self, permits: float, now_ms: int) -> None:
        """Refill, then take ``permits`` (may go below zero)."""
        self._refill(now_ms)
        self.tokens = min(self.burst, self.tokens - permits)
