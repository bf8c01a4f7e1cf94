"""AdminClient.close(): the kafka-python IO thread it started stops even when closing the
connections fails (else every failed store would leave a thread behind in a long-lived process
such as ``kconfigs serve``)."""

from __future__ import annotations

import threading

from kconfigs.kafka_admin.client import AdminClient
from kconfigs.kafka_admin.security import ClientSecurity


def _io_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "kafka-io-kconfigs" and t.is_alive()]


def test_close_stops_the_io_thread_even_when_closing_connections_fails():
    before = len(_io_threads())
    client = AdminClient("127.0.0.1:1", ClientSecurity(), controller=False, request_timeout_ms=1000)
    assert len(_io_threads()) == before + 1

    def failing_close(*_args, **_kwargs):
        raise OSError("closing the connections failed")

    client._manager.close = failing_close
    client.close()  # must not raise either
    assert len(_io_threads()) == before
