"""What the gateway takes from its store's entries: the quota keys, as numbers. A user's SCRAM
credentials share its entry and must neither become a quota nor reach the gateway's log; a value
that is not a number keeps the value the entity had, as a ZooKeeper-mode broker keeps it."""

from __future__ import annotations

import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from kconfigs.keys import QUOTA_KEYS, SCRAM_KEYS
from kconfigs.model import QuotaEntity
from kconfigs_enforcement.gateway.reload import parsed_quotas

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
        parsed = parsed_quotas({QuotaEntity(user="alice"): {**credentials, **quotas}})
    finally:
        logger.removeHandler(handler)
    expected = {QuotaEntity(user="alice"): {k: float(v) for k, v in quotas.items()}} if quotas else {}
    assert parsed == expected
    assert handler.messages == []  # a credential is not "a non-numeric quota" to warn about


def _parsed_and_logged(view, previous=None):
    handler = _Capture()
    logger = logging.getLogger("kconfigs.gateway")
    logger.addHandler(handler)
    try:
        return parsed_quotas(view, previous), handler.messages
    finally:
        logger.removeHandler(handler)


def test_a_quota_that_is_not_a_number_with_none_before_is_left_out_and_logged():
    c1 = QuotaEntity(client_id="c1")
    parsed, messages = _parsed_and_logged({c1: {"producer_byte_rate": "fast", "consumer_byte_rate": "2048"}})
    assert parsed == {c1: {"consumer_byte_rate": 2048.0}}
    assert messages == ["non-numeric quota producer_byte_rate='fast' for {'client-id': 'c1'}: ignored"]


def test_a_quota_changed_to_something_not_a_number_keeps_its_previous_value():
    c1, c2 = QuotaEntity(client_id="c1"), QuotaEntity(client_id="c2")
    previous = {c1: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 1.0}, c2: {"request_percentage": 50.0}}
    view = {
        c1: {"producer_byte_rate": "2MB", "consumer_byte_rate": "4096"},  # one key hand-edited wrong
        c2: {"request_percentage": "fifty", "producer_byte_rate": "oops"},  # one kept, one new and wrong
    }
    parsed, messages = _parsed_and_logged(view, previous)
    assert parsed == {
        c1: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 4096.0},
        c2: {"request_percentage": 50.0},
    }
    assert messages == [
        "non-numeric quota producer_byte_rate='2MB' for {'client-id': 'c1'}: keeping its previous value 1024.0",
        "non-numeric quota request_percentage='fifty' for {'client-id': 'c2'}: keeping its previous value 50.0",
        "non-numeric quota producer_byte_rate='oops' for {'client-id': 'c2'}: ignored",
    ]


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
