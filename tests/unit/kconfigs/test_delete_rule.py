"""What ``kconfigs delete`` removes, and its compare-and-set against a concurrent writer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconfigs.errors import ValidationError, VersionConflict
from kconfigs.keys import QUOTA_KEYS, SCRAM_KEYS
from kconfigs.model import QuotaEntity
from kconfigs.service import deletion_update, keys_to_delete

ALICE = QuotaEntity(user="alice")
STORED_VALUES = st.text(alphabet="0123456789.=,salt", min_size=1, max_size=8)


@given(st.dictionaries(st.sampled_from([*QUOTA_KEYS, *SCRAM_KEYS]), STORED_VALUES))
def test_with_no_key_named_every_quota_key_goes_and_only_those(current):
    quotas = {k: v for k, v in current.items() if k in QUOTA_KEYS}
    if not quotas:
        with pytest.raises(ValidationError, match="^user-principal 'alice' has no quotas: nothing deleted$"):
            keys_to_delete(ALICE, current, ())
        return
    removing = keys_to_delete(ALICE, current, ())
    assert removing == quotas
    after = deletion_update(ALICE, removing)(current)
    assert after == {k: v for k, v in current.items() if k in SCRAM_KEYS}


def test_named_keys_must_be_set_and_are_named_once():
    current = {"producer_byte_rate": "1", "SCRAM-SHA-256": "cred"}
    with pytest.raises(ValidationError, match="^Invalid config\\(s\\): consumer_byte_rate$"):
        keys_to_delete(ALICE, current, ["producer_byte_rate", "consumer_byte_rate"])
    assert keys_to_delete(ALICE, current, ["SCRAM-SHA-256", "SCRAM-SHA-256"]) == {"SCRAM-SHA-256": "cred"}


def test_a_value_changed_since_the_read_is_not_deleted():
    update = deletion_update(ALICE, {"producer_byte_rate": "1"})
    with pytest.raises(VersionConflict, match="producer_byte_rate was changed by someone else"):
        update({"producer_byte_rate": "2"})


def test_keys_written_since_the_read_stay_and_a_key_already_gone_is_fine():
    update = deletion_update(ALICE, {"producer_byte_rate": "1", "consumer_byte_rate": "2"})
    assert update({"consumer_byte_rate": "2", "request_percentage": "50"}) == {"request_percentage": "50"}
    assert update({}) == {}
