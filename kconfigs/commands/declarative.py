"""kconfigs export / diff / apply / migrate: quotas as code (format: docs/quota-file.md).

Exit codes: 0 done (diff: in sync), 2 diff found differences (and usage errors), 3 an apply or
migrate stopped part-way (every entity not applied is listed on stderr; a re-run converges),
1 any other error.
"""

from __future__ import annotations

import sys

import click

from kconfigs.commands.confirm import allow_empty_source_option, check_prune_source, confirm_destruction, yes_option
from kconfigs.commands.options import open_from_kwargs, refuse_empty, store_options
from kconfigs.errors import KconfigsError
from kconfigs.stores.factory import Access

_FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["toml", "json", "yaml"]),
    default=None,
    help="File format (default: from the file name, else toml). yaml needs PyYAML.",
)
_OUTPUT = click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text (coloured on a terminal) or one JSON object for CI.",
)
_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}


class DriftFound(KconfigsError):
    """``diff``: the store differs from the file (exit 2, so CI can gate on it)."""

    exit_code = 2


def read_quota_file(path: str, fmt: str | None):
    """The validated entries of a quota file ("-" = stdin). :raises UsageError, ValidationError:"""
    from kconfigs.quotafile import read_quota_file as read_entries

    return read_entries(path, fmt)


def _read_store(kwargs: dict, *, access: Access):
    """(store, records) with the store left open for the caller to close."""
    from kconfigs.model import MATCH_ALL

    store = open_from_kwargs(kwargs, access=access)
    try:
        return store, store.describe(MATCH_ALL)
    except BaseException:
        store.close()
        raise


def _write_atomically(path: str, text: str) -> None:
    from kconfigs.atomic_file import write_file_atomically
    from kconfigs.errors import UsageError

    try:
        write_file_atomically(path, text)
    except OSError as err:
        raise UsageError(f"Cannot write {path}: {err.strerror}") from None


@click.command()
@_FORMAT
@click.option(
    "-f",
    "--file",
    "out_path",
    type=click.Path(dir_okay=False),
    callback=refuse_empty,  # '' would print to stdout and leave the backup unwritten
    help="Write here (atomically), not stdout.",
)
@click.option(
    "--entity-type",
    "entity_types",
    multiple=True,
    type=click.Choice(sorted(_TYPES)),
    help="Only entities with this component (repeatable).",
)
@store_options
def export(fmt, out_path, entity_types, **kwargs) -> None:
    """Write every quota of the store as a quota file (round-trips through apply)."""
    from kconfigs.quotafile import desired_from_records, format_for_path, render_quota_text

    store, records = _read_store(kwargs, access=Access.READ)
    store.close()
    desired = desired_from_records(records)
    if entity_types:
        wanted = {_TYPES[t] for t in entity_types}
        desired = [d for d in desired if wanted & {t.value for t in d.entity.components()}]
    text = render_quota_text(desired, format_for_path(out_path or "", fmt))
    if out_path:
        _write_atomically(out_path, text)
    else:
        click.echo(text, nl=False)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), callback=refuse_empty)
@click.option(
    "--ignore-extra",
    is_flag=True,
    help="Compare as apply without --prune does: quotas in the store but not in FILE are no difference.",
)
@_FORMAT
@_OUTPUT
@store_options
def diff(file, ignore_extra, fmt, output, **kwargs) -> None:
    """Show how the store differs from FILE; exit 0 in sync, 2 if different. Quotas only in the
    store are differences that apply removes only with --prune (marked so), unless --ignore-extra."""
    from kconfigs.commands.plan_render import plan_json, print_plan
    from kconfigs.plan import build_plan

    desired = read_quota_file(file, fmt)
    store, records = _read_store(kwargs, access=Access.READ)
    store.close()
    prune = not ignore_extra
    plan = build_plan(desired, records, prune=prune)
    kept_by_apply = build_plan(desired, records, prune=False).left_alone if prune else 0
    if output == "json":
        import json

        report = plan_json(plan, prune=prune) | {"kept_without_prune": kept_by_apply}
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print_plan(plan, prune, sys.stdout.isatty(), click.echo, mark_prune_only=prune)
    if not plan.in_sync:
        counts = plan.entity_counts()
        kept = f"; apply without --prune keeps {kept_by_apply} key(s) of these (--ignore-extra ignores them)"
        raise DriftFound(
            f"{file} differs from the store: {counts['add']} to add, {counts['change']} to change, "
            f"{counts['remove']} to remove" + (kept if kept_by_apply else "")
        )


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), callback=refuse_empty)
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option(
    "--prune",
    is_flag=True,
    help="Also remove quotas (keys and entities) that are not in FILE (asks first on a terminal; scripts add --yes).",
)
@yes_option
@allow_empty_source_option
@_FORMAT
@_OUTPUT
@store_options
def apply(file, dry_run, prune, assume_yes, allow_empty_source, fmt, output, **kwargs) -> None:
    """Make the store hold FILE's quotas: each entity atomically, re-checked (compare-and-set)."""
    from kconfigs.plan import build_plan

    desired = read_quota_file(file, fmt)  # every value checked before anything is written
    if not dry_run:
        check_prune_source(prune, not desired, file, allow_empty_source)
    store, records = _read_store(kwargs, access=Access.PREVIEW if dry_run else Access.WRITE)
    try:
        plan = build_plan(desired, records, prune=prune)
        if dry_run and not plan.in_sync:
            _validate_on_broker(store, plan)
        if not dry_run:
            confirm_destruction(plan, f"apply {file} --prune", assume_yes)
        report = None if dry_run or plan.in_sync else _run_with_progress(store, plan)
    finally:
        store.close()
    _finish(plan, prune, report, output, "Dry run, nothing written: " if dry_run else "")


def _validate_on_broker(store, plan) -> None:
    """A dry run on a Kafka cluster sends the changes with AlterClientQuotas validateOnly, so
    the controller's own checks run too (e.g. a key that version does not know); other stores
    have nothing more to check than the file validation already did.

    :raises ValidationError: the broker refused an entity's change.
    """
    from kconfigs.errors import PartialFailure, ValidationError
    from kconfigs.plan import cas_update

    if store.kind != "admin-api":
        return
    try:
        store.alter_many([(item.entity, cas_update(item)) for item in plan.entities], validate_only=True)
    except PartialFailure as err:  # the admin store's wording says "Altered": nothing was
        raise ValidationError(f"Dry run refused by the broker (nothing written): {err}") from None


def _run_with_progress(store, plan):
    from kconfigs.applier import apply_plan

    if not sys.stderr.isatty():
        return apply_plan(store, plan)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("Applying", total=len(plan.entities))
        return apply_plan(store, plan, on_progress=lambda n: progress.advance(task, n))


def _finish(plan, prune: bool, report, output: str, prefix: str = "") -> None:
    """Print the plan and outcome; a part-way failure lists what was not applied, then raises."""
    from kconfigs.commands.plan_render import print_plan, report_json, report_lines
    from kconfigs.errors import PartialFailure

    if output == "json":
        click.echo(report_json(plan, prune, report))
    else:
        if prefix and not plan.in_sync:
            click.echo(prefix.rstrip(": ") + ".", err=True)
        print_plan(plan, prune, sys.stdout.isatty(), click.echo)
        if report is not None and report.complete:
            click.echo(report.summary() + ".")
    if report is not None and not report.complete:
        for line in report_lines(report):
            click.echo(line, err=True)
        raise PartialFailure(report.summary())


@click.command()
@click.option(
    "--from",
    "source",
    required=True,
    metavar="STORE",
    help="zk://HOST:PORT[/CHROOT], kafka://HOST:PORT, sqlite:///PATH or a profile name.",
)
@click.option("--to", "target", required=True, metavar="STORE", help="Same forms as --from.")
@click.option(
    "--command-config",
    type=click.Path(dir_okay=False),
    callback=refuse_empty,
    help="Admin client properties for a kafka:// store.",
)
@click.option("--dry-run", is_flag=True, help="Show what would be copied; write nothing.")
@click.option("--prune", is_flag=True, help="Also remove target quotas that the source does not have.")
@yes_option
@allow_empty_source_option
@_OUTPUT
def migrate(source, target, command_config, dry_run, prune, assume_yes, allow_empty_source, output) -> None:
    """Copy every quota from one store to another, then verify by re-reading the target.

    Onto a target that already has quotas, what would be overwritten or removed is shown and
    confirmed first (--yes in scripts)."""
    from kconfigs.commands.migration import migrate_quotas

    def confirm(plan, source_is_empty: bool, target_has_quotas: bool) -> None:
        check_prune_source(prune, source_is_empty, source, allow_empty_source)
        if target_has_quotas:
            confirm_destruction(plan, f"migrate to {target}", assume_yes, overwrites=True)

    plan, report = migrate_quotas(
        source,
        target,
        command_config,
        dry_run=dry_run,
        prune=prune,
        confirm=confirm,
        note=lambda line: click.echo(line, err=True),
    )
    _finish(plan, prune, report, output, "Dry run, nothing written: " if dry_run else "")
