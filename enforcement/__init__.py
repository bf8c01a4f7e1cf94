"""Kafka-exact client quota enforcement (pure: no I/O, no clock; time comes in as ``now_ms``).

Matches Apache Kafka 3.8+ brokers (``legacy_pre_3_8=True`` for older ones) to the millisecond:
sampled rates, throttle formulas and caps, 8-level precedence and sensor sharing, request
percentage (KIP-124), controller mutation token bucket (KIP-599), connection rates (KIP-612) and
the proposed producer-id quota (KIP-936).
"""

from enforcement import replay
from enforcement.clock import Clock, ManualClock, MonotonicClock
from enforcement.connection_quota import ConnectionDecision
from enforcement.enforcer import EnforcementConfig, Enforcer
from enforcement.quota_manager import MetricSample, MutationDecision
from enforcement.resolution import QuotaSnapshot, Resolved
from enforcement.rates import Rate, SampledRate
from enforcement.stats import Sample, java_round
from enforcement.throttle import throttle_time_ms

__all__ = [
    "Clock", "ConnectionDecision", "EnforcementConfig", "Enforcer", "ManualClock", "MetricSample",
    "MonotonicClock", "MutationDecision", "QuotaSnapshot", "Rate", "Resolved", "Sample", "SampledRate",
    "java_round", "replay", "throttle_time_ms",
]
