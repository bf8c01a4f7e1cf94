"""How N gateway instances split one entity's quota: demand-proportional shares with a floor.

Pure: reports and local monotonic times in, shares out. The exchange of reports (a Kafka topic)
and the enforcement of a share (the instance's own quota sensors, Kafka's math) are adapters.

The algorithm, after Raghavan et al., "Cloud Control with Distributed Rate Limiting" (SIGCOMM
2007, flow-proportional share) and Gubernator's GLOBAL mode (each instance enforces locally and
reconciles on a period):

1. Every ``period_ms`` each instance reports, per active entity and quota kind, its local
   **demand**: what its clients asked for over the period, not what they were let through. A
   throttled sensor's observed rate is its share, so its demand is estimated from the throttle
   time Kafka gave: ``X = (O - T) / T * W`` (``throttle.throttle_ms_for``) inverts to
   ``O = T * (1 + X / W)``; the client offered O and was held to T. Example: share T = 1 MB/s,
   window W = 11 s, throttle X = 5.5 s: demand 1.5 MB/s.
2. Each instance keeps the latest report of every other instance, stamped with its own
   monotonic clock **when it arrived** (never the sender's clock: clock skew between hosts
   cannot change a result). A report older than ``expiry_ms`` is dropped: that instance stopped,
   was killed or is cut off, and its share returns to the others within ``expiry_ms``.
3. The share of instance i for an entity with quota Q, over the live instances L that report
   demand for it:  ``w_j = max(d_j, floor * Q / |L|)``,  ``share_i = Q * w_i / sum(w_j)``.
   The shares always add up to Q. The floor keeps a little room on an instance whose demand
   dropped, so that a client whose traffic moves there is not held near zero for a period.
   Example: Q = 10 MB/s, demands 6, 3, 0 MB/s, floor 0.05: w = 6, 3, 0.1667; shares 6.55, 3.27,
   0.18 MB/s.
4. An instance with local demand and no report from any other (alone, or cut off from the
   topic): while its last allocation is younger than ``expiry_ms`` it keeps its last share; after
   that it holds ``Q / last_fleet_size`` (the last number of live instances it saw), which
   keeps the fleet's total at Q if nothing else changed, and says so (``Allocation.isolated``).
   An entity new to an instance (no allocation yet) starts at ``Q / fleet_size``. A fleet
   starting cold has no reports for one period: each instance then holds the whole quota, a
   transient of one period (bench_fleet_sim.py measures it with the others).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Hashable, Mapping

#: how often instances report and shares are recomputed
DEFAULT_PERIOD_MS = 250
#: a report not renewed for this long drops its instance (4 periods: one lost report is no fault)
DEFAULT_EXPIRY_MS = 1000
#: each live instance's weight is at least this share of Q / (live instances)
DEFAULT_FLOOR = 0.05
#: each period's demand moves the reported one this far (an exponential average over ~3 periods):
#: a sensor's rate over a short quota window swings with every throttle cycle, and each swing of
#: a share throttles a client at the new bound for what it sent at the old one; 8 periods (2 s)
#: leave 6 % of a step
DEFAULT_SMOOTHING = 0.3


#: a report's header: format version, flags (LEAVING), entity count
_HEADER = struct.Struct("<BBI")
#: one entity in a report: its digest and its demand (12 bytes)
_ENTRY = struct.Struct("<Qf")
REPORT_VERSION = 1
LEAVING = 1
BYTES_PER_ENTITY = _ENTRY.size


def entity_digest(name: str) -> int:
    """An entity's 64-bit name in reports: every instance derives it from the sensor name
    (``Produce-<user>:<client-id>``), which the same quotas give on every instance. A collision
    between two live entities is about n^2 / 2^65 likely (n = 10^5: 3e-10)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def encode_report(demands: Mapping[int, float], leaving: bool = False) -> bytes:
    """One instance's report: a 6-byte header and 12 bytes per entity (digest, float32 demand;
    a demand needs no more than float32's 7 digits)."""
    parts = [_HEADER.pack(REPORT_VERSION, LEAVING if leaving else 0, len(demands))]
    parts.extend(_ENTRY.pack(digest, demand) for digest, demand in demands.items())
    return b"".join(parts)


def decode_report(data: bytes) -> tuple[dict[int, float], bool]:
    """(entity digest -> demand, whether the sender is leaving). :raises ValueError: not a report
    of this format (another version, or cut short)."""
    if len(data) < _HEADER.size:
        raise ValueError("fleet report shorter than its header")
    version, flags, count = _HEADER.unpack_from(data)
    if version != REPORT_VERSION:
        raise ValueError(f"fleet report version {version}, expected {REPORT_VERSION}")
    body = memoryview(data)[_HEADER.size :]
    if len(body) != count * _ENTRY.size:
        raise ValueError(f"fleet report of {count} entities has {len(body)} body bytes")
    return dict(_ENTRY.iter_unpack(body)), bool(flags & LEAVING)


def demand_from_throttle(observed_rate: float, share: float, throttle_ms: float, window_ms: float) -> float:
    """The rate a client offered, from what it got and the throttle Kafka gave it (step 1).

    Unthrottled, the observed rate is the demand; throttled, ``share * (1 + X / W)``.
    """
    if throttle_ms <= 0 or share <= 0 or window_ms <= 0:
        return observed_rate
    return max(observed_rate, share * (1.0 + throttle_ms / window_ms))


#: a sensor whose rate over its window is at least this share of its bound is held by it
SATURATED = 0.9
#: a held instance asks for this much more than its share, so the shares move toward it
PROBE = 0.05
#: a held sensor whose rate is over this many times its bound shows a surge (clients moved here)
SURGE = 2.0


def demand_estimate(rate: float, bound: float, throttled: bool = False) -> float:
    """An instance's demand for one entity from its sensor's rate over the quota window, the
    bound it holds the sensor to and whether it throttled a client of it lately (step 1 as the
    gateway measures it).

    Unheld (no throttle, the rate under ``SATURATED`` of the bound), the rate is the demand. A
    held sensor's rate says nothing of what its clients offer: each throttle cycle is a burst and
    a pause (a muted client offers nothing until its throttle ends), so the rate sits at or under
    the bound however much more they would send. A held instance asks for its share plus
    ``PROBE``: while every instance is held the shares keep their ratios (all ask 5 % more); an
    instance using less than its share asks for what it uses, and the held ones take the rest
    within a few periods. Without this an instance whose clients recover slowly from a throttle
    would report less than its share, get less, and report less again. A held rate counts only
    past ``SURGE`` times the bound (connections moved here): below that it is throttle-cycle
    noise, and each swing it gave the share would throttle a client at the new bound for what it
    sent at the old one.
    """
    if bound > 0 and (throttled or rate >= SATURATED * bound):
        return rate if rate > SURGE * bound else bound * (1.0 + PROBE)
    return rate


def proportional_shares(quota: float, demands: Mapping[Hashable, float], floor: float = DEFAULT_FLOOR) -> dict:
    """Step 3: each instance's share of ``quota`` given every live instance's demand."""
    if not demands:
        return {}
    minimum = floor * quota / len(demands)
    weights = {instance: max(demand, minimum) for instance, demand in demands.items()}
    total = sum(weights.values())
    if total <= 0:  # no demand anywhere and no floor: an even split
        return {instance: quota / len(demands) for instance in demands}
    return {instance: quota * weight / total for instance, weight in weights.items()}


@dataclass(frozen=True)
class Allocation:
    share: float
    fleet_size: int  # live instances counted (this one included)
    isolated: bool  # no other instance's report is live: a fallback share (step 4)


class ReportBoard:
    """The latest demand report of every other instance (step 2), indexed by entity, with each
    report's arrival time on this instance's monotonic clock (ms). Filled from the coordination
    topic; read by :class:`FleetView`."""

    def __init__(self, expiry_ms: int = DEFAULT_EXPIRY_MS) -> None:
        self.expiry_ms = expiry_ms
        self._received_at: dict[Hashable, int] = {}
        self._entities_of: dict[Hashable, tuple] = {}
        self._demands: dict[Hashable, dict[Hashable, float]] = {}  # entity -> instance -> demand

    def receive(self, instance: Hashable, demands: Mapping[Hashable, float], now_ms: int) -> None:
        """An instance's report (its whole set of active entities), as it arrives."""
        self._forget_entities(instance)
        self._received_at[instance] = now_ms
        self._entities_of[instance] = tuple(demands)
        for entity, demand in demands.items():
            self._demands.setdefault(entity, {})[instance] = demand

    def expire(self, now_ms: int) -> None:
        """Drop the instances whose last report is older than ``expiry_ms``."""
        for instance in [i for i, at in self._received_at.items() if now_ms - at > self.expiry_ms]:
            self._forget_entities(instance)
            del self._received_at[instance]

    def leave(self, instance: Hashable) -> None:
        """An instance said it stops (SIGTERM): its share returns to the others at once."""
        self._forget_entities(instance)
        self._received_at.pop(instance, None)

    def instances(self) -> set:
        return set(self._received_at)

    def demands_for(self, entity: Hashable) -> Mapping[Hashable, float]:
        return self._demands.get(entity, {})

    def _forget_entities(self, instance: Hashable) -> None:
        for entity in self._entities_of.pop(instance, ()):
            demands = self._demands.get(entity)
            if demands is not None:
                demands.pop(instance, None)
                if not demands:
                    del self._demands[entity]


@dataclass
class FleetView:
    """One instance's shares, from the board of the others' reports and its own last allocations.
    Every time is this instance's own monotonic clock, in ms."""

    me: Hashable
    board: ReportBoard = field(default_factory=ReportBoard)
    floor: float = DEFAULT_FLOOR
    #: entity -> (allocated at, Allocation)
    last: dict = field(default_factory=dict)
    last_fleet_size: int = 1
    smoothing: float = DEFAULT_SMOOTHING
    #: entity -> this instance's smoothed demand
    smoothed: dict = field(default_factory=dict)

    def smooth(self, demands: Mapping[Hashable, float]) -> dict:
        """This period's demands averaged with the previous periods' (``smoothing`` of the step);
        an entity with no demand this period is dropped at once (its clients left)."""
        previous, a = self.smoothed, self.smoothing
        self.smoothed = {
            entity: demand if entity not in previous else previous[entity] + a * (demand - previous[entity])
            for entity, demand in demands.items()
        }
        return dict(self.smoothed)

    def live_instances(self, now_ms: int) -> set:
        """The instances whose last report is at most the board's expiry old, and this one."""
        self.board.expire(now_ms)
        return {self.me, *self.board.instances()}

    def allocate(self, quotas: Mapping[Hashable, float], my_demands: Mapping[Hashable, float], now_ms: int) -> dict:
        """This instance's share of each entity's quota (steps 3 and 4).

        ``quotas``: entity -> the quota Q the fleet shares; ``my_demands``: entity -> this
        instance's demand over the last period. Entities with no local demand get no
        allocation (their sensors are idle; a new one starts from :meth:`new_entity_share`).
        """
        live = self.live_instances(now_ms)
        isolated = len(live) == 1
        if not isolated:
            self.last_fleet_size = len(live)
        allocations = {}
        for entity, demand in my_demands.items():
            quota = quotas.get(entity)
            if quota is None:
                continue
            if isolated:
                allocations[entity] = self._fallback(entity, quota, now_ms)
                continue
            demands = {**self.board.demands_for(entity), self.me: demand}
            share = proportional_shares(quota, demands, self.floor)[self.me]
            allocations[entity] = Allocation(share, len(live), False)
            self.last[entity] = (now_ms, allocations[entity])
        for entity in [e for e in self.last if e not in my_demands]:
            del self.last[entity]
        return allocations

    def _fallback(self, entity: Hashable, quota: float, now_ms: int) -> Allocation:
        previous = self.last.get(entity)
        if previous is not None and now_ms - previous[0] <= self.board.expiry_ms:
            return Allocation(previous[1].share, previous[1].fleet_size, True)
        return Allocation(quota / self.last_fleet_size, self.last_fleet_size, True)

    def fleet_demand(self, entity: Hashable, my_demand: float) -> float:
        """The fleet's total demand for ``entity``: every live report's and this instance's."""
        return my_demand + sum(self.board.demands_for(entity).values())

    def new_entity_share(self, quota: float, now_ms: int) -> float:
        """The share an entity gets on its first request here, before the next allocation:
        Q / live instances (Q / the last fleet size seen, when no other is live)."""
        live = len(self.live_instances(now_ms))
        return quota / (live if live > 1 else self.last_fleet_size)
