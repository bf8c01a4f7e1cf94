"""Confirmation before a command destroys quotas (delete, apply --prune, migrate onto a store
that has quotas): what would go is shown and the user is asked on a terminal; a script must
say ``--yes`` (as Terraform's -auto-approve), so a typo in a CI job fails instead of wiping a
store. A prune whose source holds no quotas is refused outright unless ``--allow-empty-source``:
an empty file or a mistyped source store would otherwise mean "remove everything".
"""

from __future__ import annotations

import sys

import click

from kconfigs.errors import KconfigsError, UsageError

yes_option = click.option(
    "--yes",
    "-y",
    "assume_yes",
    is_flag=True,
    help="Do not ask before removing or overwriting quotas (needed when not on a terminal).",
)
allow_empty_source_option = click.option(
    "--allow-empty-source",
    is_flag=True,
    help="With --prune: allow a source that holds no quotas (which removes every quota).",
)


class NotConfirmed(KconfigsError):
    """The user answered no (or could not be asked): nothing was changed."""


def destructive_lines(plan, overwrites: bool) -> list[str]:
    """The plan's lines for the keys it removes (and, with ``overwrites``, changes), each under
    its entity's line; additions are not shown."""
    from kconfigs.commands.plan_render import plan_lines
    from kconfigs.plan import Action, Plan

    wanted = {Action.REMOVE, Action.CHANGE} if overwrites else {Action.REMOVE}
    lines: list[str] = []
    for item in plan.entities:
        item_lines = plan_lines(Plan((item,)))
        keys = [line for line, action in item_lines[1:] if action in wanted]
        if keys:
            lines += [item_lines[0][0], *keys]
    return lines


def check_prune_source(prune: bool, source_is_empty: bool, source: str, allow_empty_source: bool) -> None:
    """:raises UsageError: pruning to an empty source, unless explicitly allowed."""
    if prune and source_is_empty and not allow_empty_source:
        raise UsageError(
            f"{source} holds no quotas: --prune would remove every quota of the target. "
            f"Nothing changed; add --allow-empty-source if that is what you want"
        )


def confirm_destruction(plan, what: str, assume_yes: bool, overwrites: bool = False) -> None:
    """Show what ``plan`` removes (``overwrites``: or changes) and ask on the terminal; no
    question when it touches nothing of that kind, or with ``--yes``.

    :raises NotConfirmed: the answer was no, or there is no terminal to ask on and no --yes.
    """
    lines = destructive_lines(plan, overwrites)
    if not lines:
        return
    touched = sum(1 for line in lines if not line.startswith(" "))
    verb = "remove or overwrite" if overwrites else "remove"
    ask_before_destroying(
        lines,
        question=f"{what}: {verb} the quotas of {'this' if touched == 1 else 'these'} {_entities(touched)}?",
        refusal=f"{what} would {verb} quotas of {_entities(touched)}: nothing changed; "
        f"re-run with --yes to confirm (--dry-run lists them)",
        assume_yes=assume_yes,
    )


def ask_before_destroying(lines: list[str], question: str, refusal: str, assume_yes: bool) -> None:
    """The one rule for every destructive command: go ahead with ``--yes``; on a terminal show
    ``lines`` and ask ``question`` (default no); with no terminal to ask on, refuse.

    :raises NotConfirmed: with ``refusal`` when there is no terminal, "Nothing changed." on a no.
    """
    if assume_yes:
        return
    if not sys.stdin.isatty():
        raise NotConfirmed(refusal)
    for line in lines:
        click.echo(line, err=True)
    if not click.confirm(question, default=False, err=True):
        raise NotConfirmed("Nothing changed.")


def _entities(count: int) -> str:
    return f"{count} entity" if count == 1 else f"{count} entities"
