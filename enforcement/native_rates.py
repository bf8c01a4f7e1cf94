"""The compiled rate and sensor (``enforcement/native``, Rust) behind the public Python API.

``RateCore`` holds the ring and the fields the hot path reads (``bound``, ``cap_ms``,
``last_record_ms``); these subclasses add what only Python code reads (names, tags) and the
small API surface the pure classes have (``samples_view``, copying). Importing this module
raises ImportError when the extension was not built.
"""

from __future__ import annotations

import copy

from kconfigs_enforcement._native import RateCore
from kconfigs_enforcement._native import record_and_throttle_each as record_and_throttle_each
from kconfigs_enforcement.stats import UNLIMITED, Sample

NO_CAP_MS = 2**63 - 1


class _CopyableCore(RateCore):
    """Copy support: the native state is copied by the extension, Python slots here."""

    __slots__ = ()

    def _blank_copy(self):
        twin = type(self).__new__(type(self), self.samples, self.sample_window_ms, self.legacy_pre_3_8)
        twin._copy_core_from(self)
        return twin

    def __copy__(self):
        twin = self._blank_copy()
        for name in _slot_names(type(self)):
            if hasattr(self, name):
                setattr(twin, name, getattr(self, name))
        return twin

    def __deepcopy__(self, memo):
        twin = self._blank_copy()
        memo[id(self)] = twin
        for name in _slot_names(type(self)):
            if hasattr(self, name):
                setattr(twin, name, copy.deepcopy(getattr(self, name), memo))
        return twin

    def samples_view(self) -> tuple[Sample, ...]:
        """The ring slots in slot order (for tests and debugging)."""
        return tuple(Sample(v, s, last) for v, s, last in self._slots())


def _slot_names(cls) -> list[str]:
    return [name for klass in cls.__mro__ for name in getattr(klass, "__slots__", ())]


class NativeSampledRate(_CopyableCore):
    """Kafka's ``Rate(TimeUnit.SECONDS, new WindowedSum())``: ``SampledRate(samples=11,
    window_ms=1000, legacy_pre_3_8=False)`` with ``record``, ``measure``, ``window_ms``, ``total``."""

    __slots__ = ()

    def __init__(self, samples: int = 11, window_ms: int = 1000, legacy_pre_3_8: bool = False):
        # RateCore.__new__ also takes the sensor keywords (bound, cap_ms, ...) for the sensor
        # subclass; this signature keeps a plain rate's API as strict as the pure class's
        pass


class NativeRateSensor(_CopyableCore):
    """A quota sensor: the shared rate plus bound, cap, name, tags and last-record time.

    :param bound: the quota (per second); ``UNLIMITED`` = Long.MAX_VALUE like Kafka
    :param cap_ms: ``boundedThrottleTime`` cap (one sample window) or ``NO_CAP_MS``
    """

    __slots__ = ("name", "tags", "user", "client_id")

    def __init__(
        self,
        samples: int,
        window_ms: int,
        legacy_pre_3_8: bool,
        *,
        bound: float = UNLIMITED,
        cap_ms: int = NO_CAP_MS,
        now_ms: int = 0,
        name: str = "",
        tags: dict | None = None,
        user: str = "",
        client_id: str = "",
    ):
        # bound, cap_ms and now_ms were taken by RateCore.__new__
        self.name = name
        self.tags = tags or {}
        self.user = user  # raw names behind the tags, to re-resolve the bound on a quota change
        self.client_id = client_id
