"""The quota-enforcing Kafka gateway behind ``kconfigs serve``.

``gateway/`` moves bytes; the ``enforcement`` library decides (throttle times, connection
acceptance). Only frames that are rewritten or counted are decoded; the rest are copied by length.
"""
