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

import importlib

#: exported name -> the module that defines it; each loads on first use (PEP 562), so that a
#: subcommand's help or a Tab press that touches this package loads no decision module
_EXPORTS = {
    "Clock": "kconfigs.clock",
    "ManualClock": "kconfigs.clock",
    "MonotonicClock": "kconfigs.clock",
    "ConnectionDecision": "kconfigs_enforcement.connection_quota",
    "EnforcementConfig": "kconfigs_enforcement.enforcer",
    "Enforcer": "kconfigs_enforcement.enforcer",
    "MetricSample": "kconfigs_enforcement.quota_manager",
    "MutationDecision": "kconfigs_enforcement.quota_manager",
    "Rate": "kconfigs_enforcement.rates",
    "SampledRate": "kconfigs_enforcement.rates",
    "QuotaSnapshot": "kconfigs_enforcement.resolution",
    "Resolved": "kconfigs_enforcement.resolution",
    "Sample": "kconfigs_enforcement.stats",
    "java_round": "kconfigs_enforcement.stats",
    "throttle_time_ms": "kconfigs_enforcement.throttle",
}

__all__ = sorted([*_EXPORTS, "replay"])


def __getattr__(name: str):
    if name == "replay":
        return importlib.import_module("kconfigs_enforcement.replay")
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
