"""One loader of quota records (kconfigs.quota_records): a quota file in any format and a store
holding the same quotas give resolve, simulate, analyze and the gateway the same records."""

from __future__ import annotations

import io
import logging

import pytest

from kconfigs.errors import CorruptData
from kconfigs.model import DEFAULT, QuotaEntity
from kconfigs.quota_records import AS_BROKER, quota_numbers, records_from_file, records_from_store
from kconfigs.quotafile import DesiredQuota, render_quota_text
from kconfigs.stores.sqlite import SqliteStore
from kconfigs_analysis import quotas as analysis_quotas
from kconfigs_enforcement.commands import resolve
from kconfigs_enforcement.gateway.reload import parsed_quotas

DESIRED = [
    DesiredQuota(QuotaEntity(user="alice", client_id=DEFAULT), {"producer_byte_rate": 1048576}),
    DesiredQuota(QuotaEntity(client_id="app-1"), {"consumer_byte_rate": 2048, "request_percentage": 50.0}),
    DesiredQuota(QuotaEntity(ip="10.0.0.7"), {"connection_creation_rate": 5.0}),
]
EXPECTED = sorted(
    [
        ({"user": "alice", "client-id": None}, {"producer_byte_rate": 1048576.0}),
        ({"client-id": "app-1"}, {"consumer_byte_rate": 2048.0, "request_percentage": 50.0}),
        ({"ip": "10.0.0.7"}, {"connection_creation_rate": 5.0}),
    ],
    key=repr,
)


@pytest.mark.parametrize("suffix", [".toml", ".yaml", ".yml", ".json"])
def test_every_quota_file_format_gives_the_same_records_to_every_reader(tmp_path, suffix):
    fmt = {".yml": "yaml"}.get(suffix, suffix[1:])
    path = tmp_path / f"q{suffix}"
    path.write_text(render_quota_text(DESIRED, fmt))
    assert sorted(records_from_file(str(path)), key=repr) == EXPECTED
    # analyze --quotas and resolve/simulate --quotas read it through the same loader
    assert sorted(analysis_quotas.load_quota_file(str(path)), key=repr) == EXPECTED
    assert sorted(resolve.load_quota_file(str(path)), key=repr) == EXPECTED


def test_standard_input_is_read_as_a_quota_file(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(render_quota_text(DESIRED, "json")))
    assert sorted(records_from_file("-", "json"), key=repr) == EXPECTED


def test_a_store_gives_the_records_its_export_file_gives(tmp_path):
    store = SqliteStore(tmp_path / "q.db")
    try:
        for item in DESIRED:
            store.alter(item.entity, lambda _c, q=item.quotas: {k: str(v) for k, v in q.items()})
        store.alter(
            QuotaEntity(user="bob"),
            lambda _c: {"SCRAM-SHA-256": "salt=c2FsdA==,stored_key=K,server_key=S,iterations=4096"},
        )
        assert sorted(records_from_store(store), key=repr) == EXPECTED  # bob has no quota: no record
        assert sorted(analysis_quotas.records_from_store(store), key=repr) == EXPECTED
    finally:
        store.close()


def test_the_gateway_reads_a_store_view_as_the_commands_do_when_every_value_is_a_number():
    view = {item.entity: {k: str(v) for k, v in item.quotas.items()} for item in DESIRED}
    assert parsed_quotas(view) == quota_numbers(view)


def test_a_value_that_is_not_a_finite_number_fails_a_command_and_the_gateway_reads_it_as_a_broker():
    entity = QuotaEntity(user="x")
    with pytest.raises(CorruptData, match="Stored value 'abc' of producer_byte_rate for user-principal 'x'"):
        quota_numbers({entity: {"producer_byte_rate": "abc"}})
    with pytest.raises(CorruptData, match="'Infinity' of request_percentage"):
        quota_numbers({entity: {"request_percentage": "Infinity"}})
    told = []
    numbers = quota_numbers(
        {entity: {"request_percentage": "Infinity", "producer_byte_rate": "abc", "consumer_byte_rate": "2.5e3"}},
        AS_BROKER,
        previous={entity: {"producer_byte_rate": 1024.0}},
        on_unreadable=lambda *args: told.append(args),
    )
    assert numbers == {
        entity: {"request_percentage": float("inf"), "producer_byte_rate": 1024.0, "consumer_byte_rate": 2500.0}
    }
    assert told == [(entity, "producer_byte_rate", "abc", 1024.0)]


def test_the_gateway_logs_what_it_cannot_read(caplog):
    with caplog.at_level(logging.ERROR, logger="kconfigs.gateway"):
        assert parsed_quotas({QuotaEntity(client_id="c"): {"producer_byte_rate": "fast"}}) == {}
    assert "non-numeric quota producer_byte_rate='fast' for {'client-id': 'c'}: ignored" in caplog.text
