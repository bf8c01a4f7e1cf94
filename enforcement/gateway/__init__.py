"""The quota-enforcing Kafka gateway behind ``kconfigs serve``.

The bytes move in the Rust data plane (``enforcement/native/src/dataplane``); this package is its
control plane (configuration, store and live reload, quota state, admin answers, metrics, usage
log), and the ``enforcement`` library decides (throttle times, connection acceptance). Only
frames that are rewritten or counted are decoded; the rest are copied by length.
"""
