"""The JVM collection orders behind kafka-configs' multi-key messages; expected values are what
Kafka 3.9.2 and 4.3.1 printed for the same command lines (the differential tests run them live)."""

from kconfigs.jvm_order import (
    AddedKeys,
    java_hash_map_order,
    java_properties_order,
    java_string_hash,
    scala_champ_order,
    scala_set_text,
)


def test_up_to_four_added_keys_keep_the_properties_order():
    # --add-config connection_creation_rate=1e3,foo=...,=01 -> Set(connection_creation_rate, , foo)
    added = AddedKeys(["connection_creation_rate", "foo", ""])
    assert not added.hashed
    assert added.order == java_properties_order(["connection_creation_rate", "foo", ""])
    assert scala_set_text(added.keys_where(lambda k: True)) == ("Set(connection_creation_rate, , foo)")


def test_more_than_four_added_keys_are_a_hash_trie_and_a_filtered_one_too():
    keys = ["foo", "", "b", "some_config", "producer_byte_rate", "consumer_byte_rate"]
    added = AddedKeys(keys)
    assert added.hashed and added.order == scala_champ_order(keys)
    unknown = added.keys_where(lambda k: not k.endswith("_rate"))
    assert scala_set_text(unknown) == "Set(, b, some_config, foo)"


def test_a_rebuilt_set_of_more_than_four_prints_as_hash_set():
    added = AddedKeys(["foo", "", "b", "retention.ms", "SCRAM-SHA-256", "consumer_byte_rate"])
    unknown = added.keys_where(lambda k: k not in ("SCRAM-SHA-256", "consumer_byte_rate"))
    scram = added.keys_where(lambda k: k == "SCRAM-SHA-256")
    assert scala_set_text(unknown, scram) == "HashSet(, b, SCRAM-SHA-256, retention.ms, foo)"
    assert scala_set_text([], ["SCRAM-SHA-512", "SCRAM-SHA-256"]) == "Set(SCRAM-SHA-512, SCRAM-SHA-256)"


def test_ip_keys_plus_deletes_drop_repeats_and_follow_the_rebuilt_set():
    small = AddedKeys(["foo", "b", "connection_creation_rate"])
    assert small.keys_plus(["zz", "foo"], lambda k: k != "connection_creation_rate") == ["b", "foo", "zz"]
    large = AddedKeys(["foo", "", "b", "some_config", "connection_creation_rate"])
    assert large.keys_plus(["zz"], lambda k: k != "connection_creation_rate") == ["", "b", "zz", "some_config", "foo"]


# Orders a JDK 17 printed for these keys (java.util.Properties keySet after setProperty in order,
# and after putAll of that Properties into a new one).
TWELVE = "x-.sJdxj,_K.3Q.eM,BB,controller_mutation_rate,lwZJ,hDQ,_h2e,U,consumer_byte_rate,dhw5n1Lu,m8HFg,rL0-ur"


def test_properties_order_follows_the_tables_growth_and_its_bin_splits():
    # the 12th key doubles the table; keys ahead of a bin's last run come out reversed
    assert java_properties_order(TWELVE.split(",")) == (
        "BB,_K.3Q.eM,m8HFg,dhw5n1Lu,lwZJ,consumer_byte_rate,controller_mutation_rate,_h2e,hDQ,U,rL0-ur,x-.sJdxj"
    ).split(",")


def test_a_properties_copied_with_put_all_is_sized_up_front():
    keys = ["a1", "a2", "a3", "k9", "Aa", "BB"]
    assert java_properties_order(keys) == ["a1", "Aa", "BB", "a2", "a3", "k9"]  # 16 bins
    assert java_properties_order(keys, copied=True) == ["Aa", "BB", "k9", "a1", "a2", "a3"]  # 32 bins


def test_a_presized_hash_map_iterates_by_bin_of_its_final_table():
    # JDK 17, new HashMap<>(n) then put in order: 13 keys start at 16 bins and double at the 13th
    thirteen = [f"x{i}" for i in range(1, 14)]
    assert java_hash_map_order(thirteen, java_string_hash, 13) == (
        "x8,x9,x10,x12,x1,x11,x2,x3,x13,x4,x5,x6,x7".split(",")
    )
    assert java_hash_map_order(["b", "a"], java_string_hash, 2) == ["a", "b"]
