"""Throttle-time formulas (``QuotaUtils`` and ``ControllerMutationQuotaManager``).

If O is the observed rate and T the quota over a window W (``Rate.windowSize``, ~10-12 s with the
defaults, *not* the 1 s sample length), the delay X that brings O back to T satisfies
``O*W/(W+X) = T``, so ``X = (O-T)/T * W``; Kafka rounds with ``Math.round``.
Example (ClientQuotaManagerTest.testQuotaViolation): O = 6300 B / 10.5 s = 600 B/s, T = 500 B/s,
X = (600-500)/500 * 10 500 = 2100 ms.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from kconfigs_enforcement.rates import SampledRate
from kconfigs_enforcement.stats import java_round


def throttle_ms_for(rate_per_sec: float, quota: float, window_ms: int) -> int:
    """``QuotaUtils.throttleTime`` given the measured value, the bound and the window (ms)."""
    return java_round((rate_per_sec - quota) / quota * window_ms)


def throttle_time_ms(rate: SampledRate, quota: float, now_ms: int, cap_ms: int | None = None) -> int:
    """Throttle for ``rate`` against an upper-bound ``quota`` at ``now_ms``; 0 when within quota.

    ``cap_ms`` is ``QuotaUtils.boundedThrottleTime``'s cap: one sample window
    (``quota.window.size.seconds * 1000``) for request and connection quotas, None (no cap) for
    produce/fetch byte rates.
    """
    measured = rate.measure(now_ms)
    if measured <= quota:  # Quota.acceptable: strictly greater is a violation
        return 0
    throttle = throttle_ms_for(measured, quota, rate.window_ms(now_ms))
    return throttle if cap_ms is None or throttle < cap_ms else int(cap_ms)


def token_bucket_throttle_ms(tokens: float, quota: float) -> int:
    """``ControllerMutationQuotaManager.throttleTimeMs``: time to refill a negative bucket to 0.

    Example (StrictControllerMutationQuotaTest): tokens -80, Q = 10/s: round(80/10*1000) = 8000 ms.
    """
    return java_round(-tokens / quota * 1000)


class CombinedThrottle(NamedTuple):
    """KIP-219 for one request charged to a bandwidth quota and the request quota."""

    #: what the response carries and the connection is muted for
    throttle_ms: int
    #: whose ``throttle-time`` records it (None: no throttle)
    recorded_by: Literal["bandwidth", "request"] | None


def combined_throttle(bandwidth_ms: int, request_ms: int) -> CombinedThrottle:
    """``KafkaApis`` (Produce and Fetch): the larger throttle applies, and only its quota records it;
    the bandwidth quota only when strictly larger (a tie goes to the request quota). The data plane
    applies the same rule (``quota.rs combined_throttle``; both checked against
    ``enforcement/kip219_vectors.csv``)."""
    if bandwidth_ms <= 0 and request_ms <= 0:
        return CombinedThrottle(0, None)
    if bandwidth_ms > request_ms:
        return CombinedThrottle(bandwidth_ms, "bandwidth")
    return CombinedThrottle(request_ms, "request")
