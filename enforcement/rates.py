"""Which rate implementation enforcement runs on.

The compiled core (``enforcement/native``: Rust, built by ``pip install`` when cargo is present)
when it is importable, else the pure-Python classes with the same answers. ``KCONFIGS_PURE_PYTHON=1``
forces the pure ones (to compare the two, or to rule the extension out).
"""

from __future__ import annotations

import os

from kconfigs_enforcement.sensors import PureRateSensor, pure_record_and_throttle_each
from kconfigs_enforcement.stats import PureSampledRate

try:
    from kconfigs_enforcement import native_rates

    _pure_because = ""
except ImportError:  # not built: no Rust toolchain at install time
    native_rates = None
    _pure_because = "the native extension was not built: install with cargo on PATH for the faster core"

if os.environ.get("KCONFIGS_PURE_PYTHON") == "1":
    native_rates = None
    _pure_because = "KCONFIGS_PURE_PYTHON=1"

NATIVE = native_rates is not None
#: for the operator (``kconfigs serve`` logs it): the extension is optional at install time, so a
#: build without cargo silently falls back to pure Python
DESCRIPTION = "native (kconfigs_enforcement._native, Rust)" if NATIVE else f"pure Python ({_pure_because})"
SampledRate = native_rates.NativeSampledRate if NATIVE else PureSampledRate
RateSensor = native_rates.NativeRateSensor if NATIVE else PureRateSensor
Rate = SampledRate  # Kafka's class name
#: ``record_and_throttle_each(sensors, values, times_ms, unrecord_throttled=None) -> list[int]``:
#: many sensor decisions in one call (the native one crosses into Rust once per batch)
record_and_throttle_each = native_rates.record_and_throttle_each if NATIVE else pure_record_and_throttle_each
