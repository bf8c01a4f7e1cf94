"""``kconfigs migrate``: copy quotas between any two stores, then verify by re-reading."""

from __future__ import annotations

from typing import Callable

from kconfigs.errors import KconfigsError

VERIFY_DEADLINE_S = 15.0


class VerificationFailed(KconfigsError):
    """The target, re-read after the copy, does not hold the source's quotas."""


def open_spec(spec: str, command_config: str | None, access):
    """Open a store named by a ``migrate`` spec (URL-ish or profile). :raises UsageError:"""
    from kconfigs.profiles import resolve_store_spec
    from kconfigs.stores.factory import open_store

    return open_store(resolve_store_spec(spec, command_config), access=access)


def _records(store):
    from kconfigs.model import MATCH_ALL

    return store.describe(MATCH_ALL)


def migrate_quotas(
    source_spec: str,
    target_spec: str,
    command_config: str | None,
    *,
    dry_run: bool,
    prune: bool,
    confirm: Callable[[object, bool, bool], None],
    note: Callable[[str], None] = lambda line: None,
):
    """(plan, report): report None on a dry run or when already in sync. The source is only
    read, so a mistyped one is an error, never an empty store. ``confirm(plan, source_is_empty,
    target_has_quotas)`` runs before anything is written and may raise to stop. ``note`` is
    told, in one line, of the source's SCRAM credentials, which are not copied.

    :raises VerificationFailed: the copy completed but the target reads back differently.
    """
    from kconfigs.applier import apply_plan
    from kconfigs.keys import SCRAM_KEYS
    from kconfigs.plan import build_plan
    from kconfigs.quotafile import desired_from_records
    from kconfigs.stores.factory import Access

    source = open_spec(source_spec, command_config, Access.READ)
    try:
        records = _records(source)
    finally:
        source.close()
    desired = desired_from_records(records)
    with_credentials = sum(1 for r in records if any(key in SCRAM_KEYS for key in r.configs))
    if with_credentials:
        users = f"{with_credentials} user{'s' if with_credentials > 1 else ''}"
        note(f"Not copied: the SCRAM credentials of {users} in {source_spec} (migrate copies quotas only)")
    target = open_spec(target_spec, command_config, Access.PREVIEW if dry_run else Access.WRITE)
    try:
        actual = _records(target)
        plan = build_plan(desired, actual, prune=prune)
        if dry_run or plan.in_sync:
            return plan, None
        confirm(plan, not desired, any(r.configs for r in actual))
        report = apply_plan(target, plan)
        if report.complete:
            _verify(target, target_spec, desired, prune)
        return plan, report
    finally:
        target.close()


def _verify(target, target_spec: str, desired, prune: bool) -> None:
    """Re-read the target until it holds ``desired``. KRaft brokers answer describes from their
    metadata image, which applies a committed change a moment after the controller acknowledged
    it, so a first read may lag; a difference that lasts VERIFY_DEADLINE_S is a failure."""
    from kconfigs.plan import build_plan
    from kconfigs.retry import Backoff, RetryNeeded, retry_until

    def attempt() -> None:
        left = build_plan(desired, _records(target), prune=prune)
        if not left.in_sync:
            raise RetryNeeded()

    def give_up() -> VerificationFailed:
        left = build_plan(desired, _records(target), prune=prune)
        return VerificationFailed(
            f"Copied, but {target_spec} reads back differently for {len(left.entities)} "
            f"entities (first: {left.entities[0].entity.path if left.entities else '-'})"
        )

    retry_until(attempt, Backoff(VERIFY_DEADLINE_S * 1000, max_delay_ms=1000), on_give_up=give_up)
