"""The what-if's model of the traffic behind a broker's quota samples. Pure: numbers in, numbers out.

What a sample says (quota-enforcement.md §1, admin-tools-and-metric-dumps.md C.1):

- A ``byte-rate`` (or ``request-time``) read at time t is Kafka's ``Rate`` at t: what the
  broker *recorded* over the last ``quota.window.num`` × ``quota.window.size.seconds``
  (11 × 1 s), so a poll every 10 s describes the traffic of the interval that ends at the
  sample, not of the one that starts there.
- While a client is throttled, what the broker recorded is what it let through: the client's
  demand D is more than the observed rate O. Kafka's delay for a rate O' over the bound T is
  X = (O' - T) / T × W (W = the 11 s window, §2.2): the delay that brings the client from the
  rate it asked for down to the rate it is held at. Read backwards, a throttled sample's
  ``throttle-time`` X says by how much: D = O × (1 + X / W). An unthrottled sample's demand is
  its observed rate.

The replay therefore charges each sample's demand as a steady flow over the sample's interval:
one request every :data:`SLOT_MS` of D × that time, the last one at the sample's own time. A
client the replay throttles is muted for the throttle time, as a broker mutes its channel
(KIP-219): a request due meanwhile waits for the mute's end, and what more falls due is lost, so
a rate over the quota is held to about the quota and one under it passes whole. A throttled
Fetch delivers nothing (its bytes are unrecorded) and is asked again at the mute's end. A
sample's Rate covers the 11 s before it, so before an entity's first sample its demand is
replayed for one more quota window, uncounted: the broker's sensor was warm when the dump began,
and a fresh one would let a burst of quota × 10 s through. A
sample counts as throttled when the broker held back its client in that interval (let through
less than the sample's demand, :data:`HELD_BACK_TOLERANCE`) or throttled it at the sample's
time (its last request throttled or muted: what the broker's metric showed at that poll). On
generated dumps this reproduces each entity's throttled share within about 3 points: the
generator throttles each sample on its own, where Kafka's 11 s window carries a throttled
interval's traffic into the next one. The old model charged each 10 s
sample as one request at its start: two such lumps fall inside one 11 s window, which doubled
the measured rate and throttled steady clients under their quota.

Gateway usage-log lines are measured per window at the gateway, which logs what was sent: their
demand is their observed rate and their window is given (``window_ms``), starting at ``ts_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: quota.window.num × quota.window.size.seconds (Kafka's defaults: 11 × 1 s)
QUOTA_WINDOW_MS = 11_000
#: the replay's request spacing. A Rate measured as a request is recorded counts that request
#: with no time for it: one request per second reads a steady D as about 1.1 × D (11 requests
#: over a 10 s span), which throttled clients 9 % under their quota; ten per second, 1 %.
SLOT_MS = 100
#: a sample is throttled when the broker let through less than its demand by more than this
#: share (the client was held back in that interval; a request delayed by a mute and sent
#: within it is not held back), or when its last request was throttled or muted
HELD_BACK_TOLERANCE = 0.01
#: kinds whose throttled request delivers nothing: a broker answers a throttled Fetch with an
#: empty response and unrecords its bytes (quota-enforcement.md §2.3); a throttled Produce is
#: appended all the same
EMPTY_WHEN_THROTTLED = frozenset({"fetch"})


def demand_rate(observed_rate: float, throttle_ms: float | None, window_ms: int = QUOTA_WINDOW_MS) -> float:
    """The rate a client asked for, from a sample's observed rate and throttle time (ms).

    Worked example: held at 1.0 MB/s with a 5,500 ms throttle over the 11 s window ->
    1.0 × (1 + 5500 / 11000) = 1.5 MB/s.
    """
    if not throttle_ms or throttle_ms <= 0:
        return observed_rate
    return observed_rate * (1 + throttle_ms / window_ms)


def slot_count(interval_ms: int, slot_ms: int = SLOT_MS) -> int:
    """Requests a sample's interval is charged as: one per ``slot_ms``, at least one."""
    return max(1, round(interval_ms / slot_ms))


@dataclass
class ClientTotals:
    """What the replay of one client (entity on one broker) added up."""

    events: int = 0  # requests recorded
    throttled_events: int = 0
    throttle_ms_total: int = 0
    throttle_ms_max: int = 0
    dropped: int = 0  # connections refused
    samples: int = 0
    throttled_samples: int = 0
    demand: float = 0.0  # recording units asked for (bytes, ns)
    delivered: float = 0.0  # recording units the broker let through
    span_ms: int = 0  # time the samples covered


@dataclass
class ElasticClient:
    """One client's state: muted until ``muted_until_ms`` by its last throttled request, and the
    request it holds back meanwhile (``pending``), sent the moment the mute ends."""

    kind: str
    muted_until_ms: int = -(2**62)
    pending: int = 0
    sample_demand: float = 0.0  # of the sample being replayed
    sample_delivered: float = 0.0
    totals: ClientTotals = field(default_factory=ClientTotals)
    counting: bool = True  # False while its warm-up is replayed (added up apart, then dropped)
    warm_up: ClientTotals = field(default_factory=ClientTotals)

    @property
    def tally(self) -> ClientTotals:
        """Where the requests being replayed are added up."""
        return self.totals if self.counting else self.warm_up


class SensorGroupReplay:
    """The requests of the clients charged to one group of sensors, replayed in time order.

    ``send(key, now_ms, value) -> (throttle ms, accepted)`` records one request (the enforcer);
    ``advance(now_ms)`` runs whatever is due before ``now_ms`` (sensor expiry). A client the
    broker throttles is muted for the throttle time; a request due while it is muted waits and is
    sent when the mute ends (one request: what a muted client could not send meanwhile is lost,
    so a client asking more than its quota is held to the quota).
    """

    def __init__(self, send, advance):
        self._send = send
        self._advance = advance
        self._wakeups: list[tuple[int, int, tuple]] = []  # (mute end ms, order, client key)
        self._order = 0
        self.clients: dict[tuple, ElasticClient] = {}

    def _client(self, key: tuple, kind: str) -> ElasticClient:
        return self.clients.setdefault(key, ElasticClient(kind))

    def _deliver(self, key: tuple, client: ElasticClient, now_ms: int, value: int) -> bool:
        """Send ``value`` now; True when the broker throttled it (the client is muted from now)."""
        import heapq

        self._advance(now_ms)
        throttle_ms, accepted = self._send(key, now_ms, value)
        throttled = throttle_ms > 0
        delivered = 0 if throttled and client.kind in EMPTY_WHEN_THROTTLED else value
        client.tally.delivered += delivered
        client.sample_delivered += delivered
        record_result(client.tally, throttle_ms, accepted)
        if throttled:
            if client.kind in EMPTY_WHEN_THROTTLED:  # nothing came back: asked again when the mute ends
                client.pending = max(client.pending, value)
            client.muted_until_ms = now_ms + throttle_ms
            heapq.heappush(self._wakeups, (client.muted_until_ms, self._order, key))
            self._order += 1
        return throttled

    def _wake_until(self, now_ms: int) -> None:
        """Send the held-back requests of every mute that ends by ``now_ms``, in time order."""
        import heapq

        while self._wakeups and self._wakeups[0][0] <= now_ms:
            end_ms, _, key = heapq.heappop(self._wakeups)
            client = self.clients[key]
            if client.pending and client.muted_until_ms == end_ms:
                value, client.pending = client.pending, 0
                self._deliver(key, client, end_ms, value)

    def elastic(
        self, key: tuple, kind: str, now_ms: int, value: int, slot_ms: int, last_of_sample: bool, counted: bool = True
    ) -> None:
        """A modelled request of a sample's demand; ``last_of_sample`` closes that sample. A request
        not ``counted`` is warm-up (the traffic before the first sample): replayed, not added up."""
        self._wake_until(now_ms)
        client = self.clients.setdefault(key, ElasticClient(kind, counting=counted))
        if counted and not client.counting:  # the warm-up is over: the first sample starts now
            client.counting, client.sample_demand, client.sample_delivered = True, 0.0, 0.0
        client.tally.demand += value
        client.tally.span_ms += slot_ms
        client.sample_demand += value
        throttled_now = now_ms < client.muted_until_ms
        if throttled_now:
            client.pending = max(client.pending, value)
        else:
            throttled_now = self._deliver(key, client, now_ms, value)
        if last_of_sample:
            held_back = client.sample_delivered < (1 - HELD_BACK_TOLERANCE) * client.sample_demand
            client.totals.samples += 1
            client.totals.throttled_samples += held_back or throttled_now
            client.sample_demand = client.sample_delivered = 0.0

    def as_sent(self, key: tuple, kind: str, now_ms: int, value: int) -> None:
        """A request exactly as recorded (a trace event, a connection): no client model."""
        self._wake_until(now_ms)
        client = self._client(key, kind)
        client.totals.demand += value
        self._advance(now_ms)
        throttle_ms, accepted = self._send(key, now_ms, value)
        client.totals.delivered += value
        record_result(client.totals, throttle_ms, accepted)

    def finish(self) -> dict[tuple, ClientTotals]:
        """Send what is still held back; the totals per client key."""
        self._wake_until(2**62)
        return {key: client.totals for key, client in self.clients.items()}


def record_result(totals: ClientTotals, throttle_ms: int, accepted: bool) -> None:
    """Add one replayed request's decision to ``totals``."""
    totals.events += 1
    totals.throttled_events += throttle_ms > 0
    totals.throttle_ms_total += throttle_ms
    totals.throttle_ms_max = max(totals.throttle_ms_max, throttle_ms)
    totals.dropped += not accepted
