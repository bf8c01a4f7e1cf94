"""kafka-configs command lines that run but rarely do what was meant: one warning line each.

kafka-configs (2.8 to 4.x) runs them in silence; kconfigs runs them exactly as it does (same
stdout, same exit code: scripts keep working) and says on stderr what happened. Pure.
"""

from __future__ import annotations

from kconfigs import args as A

#: shorthand entity flags whose empty value kafka-configs reads as the default entity
_DEFAULT_FLAG = {"user": "--user-defaults", "client": "--client-defaults", "ip": "--ip-defaults"}


def empty_name_warnings(opts: A.ParsedOptions) -> list[str]:
    """``--user "$U"`` with ``U`` unset: kafka-configs names the default user."""
    warnings = [
        f"Warning: --{flag} is empty, which kafka-configs reads as the default (as {default}); an unset shell variable?"
        for flag, default in _DEFAULT_FLAG.items()
        if opts.has(flag) and opts.value(flag) == ""
    ]
    if "" in opts.values("entity-name"):
        warnings.append(
            "Warning: --entity-name is empty, which kafka-configs reads as the default (as --entity-default); "
            "an unset shell variable?"
        )
    return warnings


def ignored_word_warnings(opts: A.ParsedOptions) -> list[str]:
    """Words that follow no option, which kafka-configs ignores: ``--add-config a=1, b=2`` (a
    space after the comma) leaves ``b=2`` as such a word, and ``b`` is never set."""
    cut = any(value.endswith(",") for value in opts.values("add-config"))
    return [
        f"Warning: {word!r} follows no option and is ignored, as kafka-configs ignores it"
        + (" (a space after a comma in --add-config ends its value)" if cut and "=" in word else "")
        for word in opts.rest
    ]


def added_and_deleted_warning(add: dict[str, str], delete: list[str]) -> list[str]:
    """ZooKeeper mode applies ``--add-config k=6 --delete-config k`` as add, then delete."""
    both = [key for key in add if key in delete]
    if not both:
        return []
    return [
        f"Warning: --delete-config removes {', '.join(both)}, which --add-config sets: "
        f"{'it ends' if len(both) == 1 else 'they end'} up deleted, as kafka-configs 2.8 does"
    ]


def subcommand_hint(opts: A.ParsedOptions, subcommands) -> str | None:
    """``kconfigs --zookeeper X describe``: kconfigs' subcommands come first, else it is read as
    a kafka-configs command line with no action."""
    if opts.has("describe") or opts.has("alter") or not opts.rest or opts.rest[0] not in subcommands:
        return None
    word = opts.rest[0]
    return (
        f"{word} is a kconfigs subcommand, which comes first: kconfigs {word} [options]; "
        f"kafka-configs' grammar spells it --{word}"
        if word in ("describe", "alter")
        else f"{word} is a kconfigs subcommand, which comes first: kconfigs {word} [options]"
    )
