"""The one retry policy: every retry (a ZooKeeper compare-and-set that lost a race, an admin-API
request a broker answered with a retriable error, a migration's read-back, the admin client's
first connection) backs off exponentially against one deadline on an injectable ``Clock``."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from kconfigs.clock import MONOTONIC, Clock
from kconfigs.errors import KconfigsError

T = TypeVar("T")


class RetryNeeded(Exception):
    """Raised by an attempt that lost a race and should run again."""


def lost_a_race(err: Exception) -> bool:
    return isinstance(err, RetryNeeded)


def retriable(err: Exception) -> bool:
    """A lost race, or a kconfigs error marked ``retriable`` (e.g. NOT_CONTROLLER, a timeout)."""
    return isinstance(err, RetryNeeded) or (isinstance(err, KconfigsError) and err.retriable)


@dataclass
class Backoff:
    """Delays doubling from ``base_delay_ms`` up to ``max_delay_ms``, never past the deadline
    (``deadline_ms`` from now); ``jitter`` draws each delay uniformly below that bound, so
    writers that lost the same race do not retry in step."""

    deadline_ms: float
    base_delay_ms: float = 5
    max_delay_ms: float = 200
    jitter: bool = True
    clock: Clock = MONOTONIC
    _end_ms: float = field(init=False)
    _delay_ms: float = field(init=False)

    def __post_init__(self) -> None:
        self._end_ms = self.clock.now_ms() + self.deadline_ms
        self._delay_ms = self.base_delay_ms

    def remaining_ms(self) -> float:
        return max(0.0, self._end_ms - self.clock.now_ms())

    def expired(self) -> bool:
        return self.remaining_ms() <= 0

    def wait(self, at_least_ms: float = 0) -> float:
        """Sleep the next delay (or ``at_least_ms``), capped by the time left; return it."""
        delay_ms = self.next_delay_ms(at_least_ms)
        self.clock.sleep(delay_ms)
        return delay_ms

    def next_delay_ms(self, at_least_ms: float = 0) -> float:
        """The next delay without sleeping (for an async caller that sleeps itself)."""
        delay = random.uniform(0, self._delay_ms) if self.jitter else self._delay_ms
        self._delay_ms = min(self._delay_ms * 2, self.max_delay_ms)
        return min(max(delay, at_least_ms), self.remaining_ms())


def retry_until(
    attempt: Callable[[], T],
    backoff: Backoff,
    *,
    retry_if: Callable[[Exception], bool] = lost_a_race,
    on_give_up: Callable[[], Exception] | None = None,
) -> T:
    """Run ``attempt`` until it returns; an error ``retry_if`` accepts is retried after the
    back-off's next delay, any other error is raised at once.

    :raises: ``on_give_up()`` once the deadline has passed, or without it the last error.
    """
    while True:
        try:
            return attempt()
        except Exception as err:
            if not retry_if(err):
                raise
            if backoff.expired():
                if on_give_up is not None:
                    raise on_give_up() from None
                raise
            backoff.wait()
