"""One retry loop for the admin API: retriable KconfigsErrors are retried until a deadline.

The sleep and the clock are injected, so tests drive it without real time.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

from kconfigs.errors import KconfigsError

T = TypeVar("T")

DEFAULT_BACKOFF_MS = 100
MAX_BACKOFF_MS = 1000


def retry_until_deadline(
    attempt: Callable[[], T],
    deadline_ms: float,
    *,
    now_ms: Callable[[], float] = lambda: time.monotonic() * 1000,
    sleep_ms: Callable[[float], None] = lambda ms: time.sleep(ms / 1000),
    backoff_ms: float = DEFAULT_BACKOFF_MS,
) -> T:
    """Call ``attempt`` until it returns, raises a non-retriable error, or ``deadline_ms`` passes.

    The backoff doubles from ``backoff_ms`` up to 1 s (Kafka's retry.backoff.ms/…max.ms shape).
    :raises KconfigsError: the last error once the deadline has passed.
    """
    delay_ms = backoff_ms
    while True:
        try:
            return attempt()
        except KconfigsError as err:
            remaining_ms = deadline_ms - now_ms()
            if not err.retriable or remaining_ms <= 0:
                raise
            sleep_ms(min(delay_ms, remaining_ms))
            delay_ms = min(delay_ms * 2, MAX_BACKOFF_MS)
