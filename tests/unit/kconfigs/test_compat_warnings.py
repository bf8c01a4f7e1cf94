"""The warnings for kafka-configs command lines that run but rarely mean what they say (pure)."""

from __future__ import annotations

from kconfigs import args as A
from kconfigs.compat_warnings import (
    added_and_deleted_warning,
    empty_name_warnings,
    ignored_word_warnings,
    subcommand_hint,
)


def test_a_well_formed_command_line_gets_no_warning():
    opts = A.parse_argv(["--alter", "--user", "u", "--add-config", "a=1,b=2", "--delete-config", "c"])
    assert empty_name_warnings(opts) == ignored_word_warnings(opts) == []
    assert added_and_deleted_warning({"a": "1", "b": "2"}, ["c"]) == []
    assert subcommand_hint(opts, {"describe"}) is None


def test_each_empty_name_is_said_once_with_the_default_it_means():
    opts = A.parse_argv(["--describe", "--user", "", "--client", ""])
    assert [w.split(" is empty")[0] for w in empty_name_warnings(opts)] == ["Warning: --user", "Warning: --client"]
    assert "(as --client-defaults)" in empty_name_warnings(opts)[1]


def test_a_stray_word_is_blamed_on_a_comma_space_only_after_a_trailing_comma():
    cut = A.parse_argv(["--alter", "--user", "u", "--add-config", "a=1,", "b=2"])
    assert ignored_word_warnings(cut) == [
        "Warning: 'b=2' follows no option and is ignored, as kafka-configs ignores it "
        "(a space after a comma in --add-config ends its value)"
    ]
    stray = A.parse_argv(["--describe", "--user", "u", "extra"])
    assert ignored_word_warnings(stray) == [
        "Warning: 'extra' follows no option and is ignored, as kafka-configs ignores it"
    ]


def test_keys_both_added_and_deleted_are_named_in_the_order_added():
    assert added_and_deleted_warning({"b": "1", "a": "2"}, ["a", "b"]) == [
        "Warning: --delete-config removes b, a, which --add-config sets: they end up deleted, as kafka-configs 2.8 does"
    ]
