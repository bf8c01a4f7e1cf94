"""A literal, unoptimised transliteration of Kafka's SampledStat/WindowedSum/Rate (trunk 1eb7644
for 3.8+, the parent of 862ea12 for pre-3.8), used as the reference the O(1) implementation must
match exactly. Every measure scans every sample, as the Java code does."""

from __future__ import annotations


class KafkaSample:
    def __init__(self, now_ms):
        self.value = 0.0
        self.event_count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms

    def reset(self, now_ms):
        self.value = 0.0
        self.event_count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms


class KafkaRate:
    def __init__(self, samples=11, window_ms=1000, legacy=False):
        self.n, self.w, self.legacy = samples, window_ms, legacy
        self.samples: list[KafkaSample] = []
        self.current = 0

    def _current(self, t):
        if not self.samples:
            self.samples.append(KafkaSample(t))
        return self.samples[self.current]

    def record(self, value, t):
        sample = self._current(t)
        if t - sample.start_ms >= self.w:
            ring = self.n if self.legacy else self.n + 1
            self.current = (self.current + 1) % ring
            if self.current >= len(self.samples):
                sample = KafkaSample(t)
                self.samples.append(sample)
            else:
                sample = self._current(t)
                sample.reset(t)
        sample.value += value
        sample.event_count += 1
        if not self.legacy:
            sample.last_event_ms = t

    def _purge(self, now):
        expire_age = self.n * self.w
        for s in self.samples:
            key = s.start_ms if self.legacy else s.last_event_ms
            if now - key >= expire_age:
                s.reset(now)

    def _oldest(self, now):
        if not self.samples:
            self.samples.append(KafkaSample(now))
        oldest = self.samples[0]
        for s in self.samples[1:]:
            if s.start_ms < oldest.start_ms:
                oldest = s
        return oldest

    def window_size(self, now):
        self._purge(now)
        elapsed = now - self._oldest(now).start_ms
        full = int(elapsed / self.w) if elapsed < 0 else elapsed // self.w  # Java truncation
        if full < self.n - 1:
            elapsed += (self.n - 1 - full) * self.w
        return max(elapsed, 1)

    def measure(self, now):
        self._purge(now)
        total = 0.0
        for s in self.samples:
            total += s.value
        return total / (self.window_size(now) / 1000.0)


def java_round(x):
    """Java Math.round via exact rational arithmetic (independent of the implementation's trick)."""
    import math
    from fractions import Fraction

    return math.floor(Fraction(x) + Fraction(1, 2))


def kafka_throttle(rate: KafkaRate, bound, now, cap=None):
    value = rate.measure(now)
    if value <= bound:
        return 0
    t = java_round((value - bound) / bound * rate.window_size(now))
    return t if cap is None else min(t, cap)
