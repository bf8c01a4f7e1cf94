"""The one retry loop (style: retries go through one function with injectable sleep and deadline)."""

from __future__ import annotations

import random
import time
from typing import Callable, TypeVar

T = TypeVar("T")


class RetryNeeded(Exception):
    """Raised by an attempt that lost a race and should run again."""


def retry_until(
    attempt: Callable[[], T],
    *,
    deadline_s: float,
    on_give_up: Callable[[], Exception],
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    base_delay_s: float = 0.005,
    max_delay_s: float = 0.2,
) -> T:
    """Run ``attempt`` until it returns, retrying on :class:`RetryNeeded` with jittered
    exponential back-off; raise ``on_give_up()`` once ``deadline_s`` seconds have passed."""
    start = clock()
    delay = base_delay_s
    while True:
        try:
            return attempt()
        except RetryNeeded:
            if clock() - start >= deadline_s:
                raise on_give_up() from None
            sleep(random.uniform(0, delay))
            delay = min(delay * 2, max_delay_s)
