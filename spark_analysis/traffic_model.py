"""The what-if's model of the traffic behind a broker's quota samples. Pure: numbers in, numbers out.

What a broker's poll says (Kafka's ``ClientQuotaManager``; quota-enforcement.md §1, §2, §8.1):

- ``byte-rate`` (or ``request-time``) at time t is the quota sensor's ``Rate`` at t: what the
  broker *recorded* over ``quota.window.num`` × ``quota.window.size.seconds`` (11 × 1 s) before
  t, so a poll describes the traffic of the interval that ends at it, not of the one after it.
- ``throttle-time`` at t is another sensor, an ``Avg`` over ``metrics.num.samples`` ×
  ``metrics.sample.window.ms`` (2 × 30 s) of the throttles the broker recorded (only those > 0).
  It reads NaN when no throttle was recorded in the 60 s before t: a poll reads "throttled"
  (:data:`THROTTLE_AVG_MS`) for a minute after the client's last throttle, whatever it did in
  the poll's own interval. So the share of throttled samples is the share of polls with a
  throttle in the minute before them, and the replay counts its samples by the same rule.
- A broker throttles a record exactly when the Rate, with it, is over the quota, and then holds
  the client at about the quota: a throttled sample whose Rate reads over the quota in force
  (:data:`HELD_RATE_SHARE`) was held back in its interval and asked for more than it got.
  Kafka's delay for a rate O' over the bound T is X = (O' - T) / T × W (W = the 11 s window,
  §2.2), the delay that brings the client from the rate it asked for down to the rate it is held
  at; read backwards, D = O × (1 + X / W). Every other sample's demand is its observed rate: its
  throttle-time remembers an earlier interval.

The replay charges each sample's demand as a steady flow over the sample's interval (for polls
5.5 to 11 s apart, the flow whose Rate, with the last part of the interval before, reads the
sample: ``whatif._flow_of_rates``; otherwise the rate itself): one request
every :data:`SLOT_MS` of D × that time, the last one at the sample's own time, each recorded at
:func:`recorded_share` of its amount so that Kafka's Rate reads the flow's own rate. A client the replay
throttles is muted for the throttle time, as a broker mutes its channel (KIP-219): a request due
meanwhile waits for the mute's end, and what more falls due is lost, so a rate over the quota is
held to about the quota and one under it passes whole. A throttled Fetch delivers nothing (its
bytes are unrecorded) and is asked again at the mute's end. Before an entity's first sample its
demand is replayed for one more quota window, uncounted: the broker's sensor was warm when the
dump began, and a fresh one would let a burst of quota × 10 s through.

Gateway usage-log lines are measured per window at the gateway, which logs what was sent and the
throttles it returned in that window: their demand is their observed rate, their window is given
(``window_ms``, starting at ``ts_ms``), and a line is throttled for a throttle in its own window,
or when a throttle given before holds the client muted through its end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: quota.window.num × quota.window.size.seconds (Kafka's defaults: 11 × 1 s)
QUOTA_WINDOW_MS = 11_000
#: the replay's request spacing: a speed knob (a 10-s sample is interval / SLOT_MS requests).
#: A Rate window of E ms over requests s ms apart holds E / s + 1 of them, so a steady flow read
#: as requests measures (E + s) / E of its rate (one a second: 1.09 ×, which throttled clients
#: 9 % under their quota); :func:`recorded_share` takes that out. Coarser slots hold a client far
#: over its quota off the quota: at 200 ms a Fetch 4 × over it gets 5.2 % under (a throttled
#: Fetch delivers nothing and is asked again only when its mute ends), at 100 ms under 1 %.
SLOT_MS = 100
#: quota.window.size.seconds: one sample of the Rate
QUOTA_SAMPLE_MS = 1000
#: what a broker's ``throttle-time`` (an Avg, not a quota Rate) remembers: metrics.num.samples (2)
#: × metrics.sample.window.ms (30 s). It records only throttles > 0 and reads NaN once none was
#: recorded in that time, so a poll reads "throttled" for 60 s after the client's last throttle
THROTTLE_AVG_MS = 60_000
#: a throttled sample was held back in its own interval when its Rate reads over the quota in
#: force (a broker throttles a record exactly when the Rate, with it, is over the quota); with
#: no quota known, within 1 % of its series' highest rate (the rate the broker held it to)
HELD_RATE_SHARE = {"quota": 1.0, "series_max": 0.99}
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


def recorded_share(slot_ms: int) -> float:
    """The share of a slot's request the replay records, so that a flow replayed as one request
    per ``slot_ms`` never reads above its own rate in Kafka's Rate. A Rate sample is purged 11 s
    after its last request, and the sample before the oldest one kept ended one slot before it
    began, so the window's span E moves from 11 s - slot to 12 s - slot (3.8+: quota-enforcement.md
    §1.5) and holds E / slot + 1 requests: a Rate over it reads (E + slot) / E × the flow, highest
    at the shortest span, 11 s / (11 s - slot). Each request records the inverse share of its
    amount: the Rate then reads the flow's rate at the shortest span and less elsewhere (ten a
    second: at most 0.8 % under), and a flow at its quota is never throttled.

    Worked example: one request a second, E = 10 s at the shortest: 11 requests of 1 MB read
    11 MB / 10 s = 1.1 MB/s for a 1 MB/s flow; recorded as 10/11 MB each, 1.0 MB/s.
    """
    if slot_ms <= 0:
        return 1.0
    return max(QUOTA_WINDOW_MS - min(slot_ms, QUOTA_SAMPLE_MS), 1) / QUOTA_WINDOW_MS


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
    last_throttle_ms: int = -(2**62)  # when the broker last throttled it (what throttle-time remembers)
    share: float = 1.0  # of a request's amount the broker records (:func:`recorded_share`)
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
        throttle_ms, accepted = self._send(key, now_ms, max(1, int(value * client.share)))  # never over
        throttled = throttle_ms > 0
        client.tally.delivered += 0 if throttled and client.kind in EMPTY_WHEN_THROTTLED else value
        record_result(client.tally, throttle_ms, accepted)
        if throttled:
            client.last_throttle_ms = now_ms
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
        self,
        key: tuple,
        kind: str,
        now_ms: int,
        value: int,
        slot_ms: int,
        last_of_sample: bool,
        counted: bool = True,
        throttle_lookback_ms: int = THROTTLE_AVG_MS,
    ) -> None:
        """A modelled request of a sample's demand; ``last_of_sample`` closes that sample, which
        counts as throttled when the client was throttled in the ``throttle_lookback_ms`` before
        it (a broker's throttle-time: :data:`THROTTLE_AVG_MS`; a usage-log line: its window) or
        is muted still. A
        request not ``counted`` is warm-up (the traffic before the first sample): replayed, not
        added up."""
        self._wake_until(now_ms)
        client = self.clients.get(key)
        if client is None:
            client = self.clients[key] = ElasticClient(kind, counting=counted, share=recorded_share(slot_ms))
        if counted and not client.counting:  # the warm-up is over: the first sample starts now
            client.counting = True
        client.tally.demand += value
        client.tally.span_ms += slot_ms
        if now_ms < client.muted_until_ms:
            client.pending = max(client.pending, value)
        else:
            self._deliver(key, client, now_ms, value)
        if last_of_sample:
            client.totals.samples += 1
            # still muted at the sample's end: its requests wait for a throttle given before the
            # lookback (a usage-log line's window is shorter than a long mute), held back all the same
            held_back = now_ms - client.last_throttle_ms < throttle_lookback_ms or now_ms < client.muted_until_ms
            client.totals.throttled_samples += held_back

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
