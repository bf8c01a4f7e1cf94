"""The keys kafka-configs over a server refuses, named as the Java tool (4.4) names them: the
expected texts are what real kafka-configs 4.4.0 printed for these command lines (the
differential tests run the tool live, on generated ones)."""

from __future__ import annotations

import pytest

from kconfigs.bootstrap_mode import check_alter_keys, quota_update
from kconfigs.bootstrap_scram import check_keyless_alter
from kconfigs.config_grammar import parse_add_config
from kconfigs.errors import UsageError, ValidationError
from kconfigs.jvm_order import java_hash_order, java_hash_set_copy_bins
from kconfigs.kafka_texts import TEXTS, Dialect

JAVA = lambda: TEXTS[Dialect.KAFKA_4_4]  # noqa: E731
SCALA = lambda: TEXTS[Dialect.KAFKA_4]  # noqa: E731
USERS_ADD = "Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server."
USERS_DELETE = "Only quota and SCRAM credential configs can be deleted for 'users' using --bootstrap-server."
CLIENTS_ADD = "Only quota configs can be added for 'clients' using --bootstrap-server."
CLIENTS_DELETE = "Only quota configs can be deleted for 'clients' using --bootstrap-server."
IPS = "Only connection quota configs can be added for 'ips' using --bootstrap-server."
THIRTEEN = "a1=1,a2=2,a3=3,k9=4,Aa=5,BB=6,q=7,w=8,e=9,r=10,t=11,y=12,zz=13"


@pytest.mark.parametrize(
    "types, add, delete, expected",
    [
        (
            ["users"],
            "foo=1,b=2,some_config=3,retention.ms=4,x=5,zz=6",
            [],
            f"{USERS_ADD} Unexpected config names: some_config,zz,b,foo,x,retention.ms",
        ),
        (
            ["clients"],
            "foo=1,SCRAM-SHA-512=[password=p],x=1,SCRAM-SHA-256=[password=p]",
            [],
            f"{CLIENTS_ADD} Unexpected config names: SCRAM-SHA-512,SCRAM-SHA-256,foo,x",
        ),
        (
            ["clients"],
            "",
            ["zz", "foo", "SCRAM-SHA-256", "foo"],
            f"{CLIENTS_DELETE} Unexpected config names: zz,SCRAM-SHA-256,foo",
        ),
        (["users"], "", ["zz", "foo", "x", "b", "foo"], f"{USERS_DELETE} Unexpected config names: zz,b,foo,x"),
        (["ips"], "connection_creation_rate=1,foo=2,b=3", ["zz", "x"], f"{IPS} Unexpected config names: zz, b, foo, x"),
        # 13 keys: the HashSet has doubled to 32 bins
        (["users"], THIRTEEN, [], f"{USERS_ADD} Unexpected config names: Aa,BB,zz,e,k9,a1,a2,q,a3,r,t,w,y"),
        # 12 keys in 16 bins, then copied (new HashSet<>(set)) into 32 bins for the clients' message
        (
            ["users", "clients"],
            THIRTEEN.rsplit(",", 1)[0],
            [],
            f"{CLIENTS_ADD} Unexpected config names: Aa,BB,e,k9,a1,a2,q,a3,r,t,w,y",
        ),
    ],
)
def test_refused_keys_are_named_as_kafka_configs_4_4_names_them(types, add, delete, expected):
    names = ["u", "c"][: len(types)]
    with pytest.raises(UsageError) as err:
        check_alter_keys(types, names, parse_add_config(add) if add else {}, delete, JAVA)
    assert str(err.value) == expected


def test_the_scala_tool_prints_its_collections_and_texts_are_asked_only_to_refuse():
    with pytest.raises(UsageError) as err:
        check_alter_keys(["users"], ["u"], {}, ["zz", "foo", "zz"], SCALA)
    assert str(err.value) == f"{USERS_DELETE} Unexpected config names: ArrayBuffer(zz, foo, zz)"
    assert check_alter_keys(["users"], ["u"], {"producer_byte_rate": "1"}, [], lambda: pytest.fail("asked")) == "quota"


@pytest.mark.parametrize(
    "types, add, delete, api",
    [
        (["ips"], {"connection_creation_rate": "1"}, [], "quota"),
        (["ips"], {}, ["connection_creation_rate"], "quota"),
        (["users"], {"producer_byte_rate": "1"}, [], "quota"),
        (["users", "clients"], {}, ["request_percentage"], "quota"),
        (["users"], {"SCRAM-SHA-256": "password=p"}, [], "scram"),
        (["users"], {}, ["SCRAM-SHA-512"], "scram"),
    ],
)
def test_an_accepted_alter_goes_to_its_api(types, add, delete, api):
    names = ["u", "c"][: len(types)]
    for texts in (None, SCALA, JAVA):
        assert check_alter_keys(types, names, add, delete, texts) == api


def test_java_hash_order_and_the_copy_of_a_set():
    assert java_hash_order(["SCRAM-SHA-256", "SCRAM-SHA-512"]) == ["SCRAM-SHA-512", "SCRAM-SHA-256"]  # bins 6, 0
    assert java_hash_set_copy_bins(12) == 32 and java_hash_set_copy_bins(11) == 16
    assert java_hash_order(["b", "b", "a"]) == ["a", "b"]


def test_of_several_unparsable_values_the_first_in_the_hash_maps_order_is_named():
    add = {"producer_byte_rate": "x", "request_percentage": "y"}  # bins 11 and 7 of 16
    with pytest.raises(ValidationError, match="for request_percentage: y"):
        quota_update(add, [], texts=JAVA)({})


def test_a_keyless_alter_of_a_pair_prints_a_java_list():
    with pytest.raises(ValidationError, match=r"multiple users: \[c, u\]$"):
        check_keyless_alter(["c", "u"], java_tool=True)
    with pytest.raises(ValidationError, match=r"multiple users: List\(c, u\)$"):
        check_keyless_alter(["c", "u"])
