"""What the gateway installs after a run of store changes is the store's content, whichever
entities each change touched (the reloader re-parses only those), and each reload line counts
the entities that changed. A real embedded store and its change-log watch."""

from __future__ import annotations

import asyncio
import logging
import threading

from kconfigs.model import DEFAULT, QuotaEntity
from kconfigs.stores.sqlite import SqliteStore
from kconfigs_enforcement.gateway.reload import QuotaReloader
from tests.integration.gateway_support import wait_until


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _set(store: SqliteStore, entity: QuotaEntity, configs: dict[str, str]) -> None:
    store.alter(entity, lambda _current: dict(configs))


def test_installed_quotas_follow_every_change_and_lines_count_what_changed(tmp_path):
    store = SqliteStore(str(tmp_path / "q.db"))
    a, b, c = QuotaEntity(client_id="a"), QuotaEntity(user="u", client_id=DEFAULT), QuotaEntity(ip="10.0.0.1")
    _set(store, a, {"producer_byte_rate": "1000"})
    _set(store, b, {"consumer_byte_rate": "2000", "request_percentage": "50"})
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    installed: list[dict] = []
    lines, logger = _Lines(), logging.getLogger("kconfigs.gateway")
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    reloader = QuotaReloader(store, loop, lambda records: installed.append({str(e): q for e, q in records}))
    try:
        reloader.start()
        assert wait_until(lambda: len(installed) == 1, 10)
        _set(store, c, {"connection_creation_rate": "5"})  # added
        assert wait_until(lambda: len(installed) == 2, 10)
        _set(store, a, {"producer_byte_rate": "1500"})  # changed
        assert wait_until(lambda: len(installed) == 3, 10)
        store.alter(b, lambda _current: {})  # removed
        assert wait_until(lambda: len(installed) == 4, 10)
        _set(store, c, {"connection_creation_rate": "5"})  # written again unchanged: nothing installed
        _set(store, a, {"producer_byte_rate": "1500", "consumer_byte_rate": "7"})
        assert wait_until(lambda: len(installed) == 5, 10)
    finally:
        reloader.close()
        loop.call_soon_threadsafe(loop.stop)
        logger.removeHandler(lines)
        store.close()
    assert installed[-1] == {
        str(a.to_json()): {"producer_byte_rate": 1500.0, "consumer_byte_rate": 7.0},
        str(c.to_json()): {"connection_creation_rate": 5.0},
    }
    reloads = [m for m in lines.messages if m.startswith("quotas ")]
    assert reloads == [
        "quotas loaded: 2 entities",
        "quotas changed: 1 entity (1 added, 0 changed, 0 removed); 3 entities in force",
        "quotas changed: 1 entity (0 added, 1 changed, 0 removed); 3 entities in force",
        "quotas changed: 1 entity (0 added, 0 changed, 1 removed); 2 entities in force",
        "quotas changed: 1 entity (0 added, 1 changed, 0 removed); 2 entities in force",
    ]
