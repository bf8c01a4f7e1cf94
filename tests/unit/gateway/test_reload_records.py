"""What the gateway takes from its store's entries: the quota keys, as numbers. A user's SCRAM
credentials share its entry and must neither become a quota nor reach the gateway's log."""

from __future__ import annotations

import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from kconfigs.keys import QUOTA_KEYS, SCRAM_KEYS
from kconfigs.model import QuotaEntity
from kconfigs_enforcement.gateway.reload import records_from_view

_NUMBERS = st.integers(min_value=1, max_value=10**12).map(str)
_CREDENTIALS = st.text(min_size=1, max_size=40).map(lambda s: f"salt={s},stored_key=K,server_key=S,iterations=4096")


@settings(max_examples=200, deadline=None)
@given(
    quotas=st.dictionaries(st.sampled_from(sorted(QUOTA_KEYS)), _NUMBERS, max_size=4),
    credentials=st.dictionaries(st.sampled_from(SCRAM_KEYS), _CREDENTIALS, max_size=2),
)
def test_credentials_are_left_out_and_never_logged(quotas, credentials):
    handler = _Capture()
    logger = logging.getLogger("kconfigs.gateway")
    logger.addHandler(handler)
    try:
        records = records_from_view({QuotaEntity(user="alice"): {**credentials, **quotas}})
    finally:
        logger.removeHandler(handler)
    expected = [({"user": "alice"}, {k: float(v) for k, v in quotas.items()})] if quotas else []
    assert records == expected
    assert handler.messages == []  # a credential is not "a non-numeric quota" to warn about


def test_a_quota_that_is_not_a_number_is_dropped_with_a_warning_naming_it():
    handler = _Capture()
    logger = logging.getLogger("kconfigs.gateway")
    logger.addHandler(handler)
    try:
        records = records_from_view(
            {QuotaEntity(client_id="c1"): {"producer_byte_rate": "fast", "consumer_byte_rate": "2048"}}
        )
    finally:
        logger.removeHandler(handler)
    assert records == [({"client-id": "c1"}, {"consumer_byte_rate": 2048.0})]
    assert handler.messages == ["ignoring non-numeric quota producer_byte_rate='fast' for {'client-id': 'c1'}"]


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
