"""Kafka-exact client quota enforcement, and the gateway and commands built on it.

The decision modules here (``stats``, ``sensors``, ``throttle``, ``token_bucket``, ``resolution``,
``quota_manager``, ``connection_quota``, ``producer_ids``, ``enforcer``, ``replay``) do no I/O:
time comes in as ``now_ms``. They match Apache Kafka 3.8+ brokers (``legacy_pre_3_8=True`` for
older ones) to the millisecond: sampled rates, throttle formulas and caps, 8-level precedence and
sensor sharing, request percentage (KIP-124), controller mutation token bucket (KIP-599),
connection rates (KIP-612) and the proposed producer-id quota (KIP-936). ``rates`` picks the
compiled (``native/``, Rust) or pure-Python rate once at import.

Above them: ``gateway/`` (the Kafka-protocol proxy's control plane around the native data plane in
``native/``, which applies these decisions) and ``commands/`` (``kconfigs serve``, ``simulate``,
``resolve``). This package uses ``kconfigs``' model and stores; ``kconfigs`` never imports it.
"""

from kconfigs.clock import Clock, ManualClock, MonotonicClock
from kconfigs_enforcement import replay
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
