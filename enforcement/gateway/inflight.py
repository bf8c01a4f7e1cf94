"""The in-flight table of one connection: requests forwarded upstream, awaiting their response.

Kafka answers a connection's requests in order, so a FIFO of what was sent is enough to pair each
response with its request (correlation ids are checked, not trusted to be unique). Entries are
pushed *before* the request is forwarded so the response loop can never see an unknown response.
The table is bounded: when it is full the client->upstream loop waits, which stops reading from
the client (pipelining with backpressure).
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MAX_INFLIGHT = 256  # grepplabs' --kafka-max-open-requests


class CorrelationMismatch(ValueError):
    """A response arrived whose correlation id is not the oldest outstanding request's."""


@dataclass
class InflightRequest:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request_bytes: int
    #: perf_counter_ns when the request was written upstream (request-time accounting)
    sent_ns: int = 0
    #: anything the response handler needs (e.g. the principal at request time)
    context: dict[str, Any] = field(default_factory=dict)


class InflightTable:
    """Bounded FIFO of :class:`InflightRequest`; push waits while full, pop waits while empty."""

    def __init__(self, max_inflight: int = DEFAULT_MAX_INFLIGHT):
        if max_inflight < 1:
            raise ValueError("max_inflight must be at least 1")
        self._max = max_inflight
        self._entries: collections.deque[InflightRequest] = collections.deque()
        self._space = asyncio.Event()  # set by pop: a waiting pusher re-checks
        self._available = asyncio.Event()
        self._empty = asyncio.Event()
        self._empty.set()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def full(self) -> bool:
        return len(self._entries) >= self._max

    async def wait_for_space(self) -> None:
        """Until a push would not wait (the proxy waits here *before* reading the next request)."""
        while len(self._entries) >= self._max:
            self._space.clear()
            await self._space.wait()

    async def push(self, entry: InflightRequest) -> None:
        await self.wait_for_space()
        self._entries.append(entry)
        self._empty.clear()
        self._available.set()

    async def next(self) -> InflightRequest:
        """The oldest entry, without removing it (waits while the table is empty)."""
        while not self._entries:
            self._available.clear()
            await self._available.wait()
        return self._entries[0]

    def oldest(self) -> InflightRequest | None:
        """The oldest entry (the next response is its), or None; never waits."""
        return self._entries[0] if self._entries else None

    def match(self, correlation_id: int) -> InflightRequest:
        """The oldest entry, checked to be the one a response with ``correlation_id`` answers; it
        stays in the table until :meth:`pop`, i.e. until the response has been sent on whole
        (local answers and shutdown wait for that, not just for its arrival).

        :raises CorrelationMismatch: for a response nobody asked for or not for the oldest request.
        """
        if not self._entries:
            raise CorrelationMismatch(f"unsolicited response with correlation id {correlation_id}")
        entry = self._entries[0]
        if entry.correlation_id != correlation_id:
            raise CorrelationMismatch(
                f"response correlation id {correlation_id} does not match the oldest request's {entry.correlation_id}"
            )
        return entry

    def pop(self) -> InflightRequest:
        """Remove the oldest entry (its response has been sent on)."""
        entry = self._entries.popleft()
        self._space.set()
        if not self._entries:
            self._empty.set()
        return entry

    async def wait_empty(self) -> None:
        """Wait until every forwarded request has been answered and its response sent on
        (ordering for local answers, and draining on shutdown)."""
        await self._empty.wait()
