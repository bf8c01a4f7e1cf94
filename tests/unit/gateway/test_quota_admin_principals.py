"""Who may alter quotas through the gateway: the principals named in quota_admin_principals, by
their bare name or as Kafka writes them in super.users (``User:alice``); nobody else, and nobody
by default. Requests are real AlterClientQuotas frames; the store is a real embedded store."""

from __future__ import annotations

import pytest

from kconfigs.model import MATCH_ALL
from kconfigs.stores.sqlite import SqliteStore
from kconfigs_enforcement.gateway import codec
from kconfigs_enforcement.gateway.admin import ALTER_CLIENT_QUOTAS, CLUSTER_AUTHORIZATION_FAILED, QuotaAdmin
from kconfigs_enforcement.gateway.headers import parse_request_prefix


def _alter_frame(user: str, rate: float) -> bytes:
    request_class = codec.request_class(ALTER_CLIENT_QUOTAS)[1]
    entry = request_class.EntryData(
        entity=[request_class.EntryData.EntityData(entity_type="user", entity_name=user)],
        ops=[request_class.EntryData.OpData(key="producer_byte_rate", value=rate, remove=False)],
    )
    request = request_class(entries=[entry], validate_only=False)
    request.with_header(correlation_id=7, client_id="admin-test")
    return codec.encode_message(request)


def _alter(admin: QuotaAdmin, principal: str, user: str, rate: float) -> int:
    frame = _alter_frame(user, rate)
    answer = admin.answer_blocking(parse_request_prefix(frame), frame, principal)
    response = codec.response_class(ALTER_CLIENT_QUOTAS)[1].decode(answer, header=True)
    (entry,) = response.entries
    return entry.error_code


@pytest.mark.parametrize(
    "configured, allowed, refused",
    [
        (["alice"], ["alice"], ["bob", "User:alice", "ANONYMOUS"]),
        (["User:alice"], ["alice"], ["bob", "ANONYMOUS"]),
        (["User:CN=ops,O=example"], ["CN=ops,O=example"], ["CN=ops"]),
        (["*"], ["alice", "ANONYMOUS"], []),
        ([], [], ["alice", "ANONYMOUS"]),
    ],
)
def test_only_the_named_principals_may_alter(tmp_path, configured, allowed, refused):
    store = SqliteStore(tmp_path / "q.db")
    try:
        admin = QuotaAdmin(store, "gateway", configured)
        for number, principal in enumerate(allowed + refused, start=1):
            code = _alter(admin, principal, f"u{number}", 1000.0 * number)
            assert code == (0 if principal in allowed else CLUSTER_AUTHORIZATION_FAILED), principal
        written = {r.entity.user for r in store.describe(MATCH_ALL)}
        assert written == {f"u{number}" for number in range(1, len(allowed) + 1)}
    finally:
        store.close()
