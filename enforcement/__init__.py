"""Kafka-exact client quota enforcement (pure: no I/O, no clock; time comes in as ``now_ms``).

Matches Apache Kafka 3.8+ brokers (``legacy_pre_3_8=True`` for older ones) to the millisecond:
sampled rates, throttle formulas and caps, 8-level precedence and sensor sharing, request
percentage (KIP-124), controller mutation token bucket (KIP-599), connection rates (KIP-612) and
the proposed producer-id quota (KIP-936).
"""

from kconfigs_enforcement import replay
from kconfigs_enforcement.clock import Clock, ManualClock, MonotonicClock
from kconfigs_enforcement.connection_quota import ConnectionDecision
from kconfigs_enforcement.enforcer import EnforcementConfig, Enforcer
from kconfigs_enforcement.quota_manager import MetricSample, MutationDecision
from kconfigs_enforcement.rates import Rate, SampledRate
from kconfigs_enforcement.resolution import QuotaSnapshot, Resolved
from kconfigs_enforcement.stats import Sample, java_round
from kconfigs_enforcement.throttle import throttle_time_ms

__all__ = [
    "Clock",
    "ConnectionDecision",
    "EnforcementConfig",
    "Enforcer",
    "ManualClock",
    "MetricSample",
    "MonotonicClock",
    "MutationDecision",
    "QuotaSnapshot",
    "Rate",
    "Resolved",
    "Sample",
    "SampledRate",
    "java_round",
    "replay",
    "throttle_time_ms",
]
