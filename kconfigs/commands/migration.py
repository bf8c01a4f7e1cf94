"""``kconfigs migrate``: copy quotas between any two stores, then verify by re-reading."""

from __future__ import annotations

from kconfigs.errors import KconfigsError

VERIFY_DEADLINE_S = 15.0


class VerificationFailed(KconfigsError):
    """The target, re-read after the copy, does not hold the source's quotas."""


def open_spec(spec: str, command_config: str | None):
    """Open a store named by a ``migrate`` spec (URL-ish or profile). :raises UsageError:"""
    from kconfigs.profiles import config_path, load_config, parse_store_spec
    from kconfigs.stores.factory import StoreOptions, open_store

    path = config_path()
    config = load_config(path) if "://" not in spec else {}
    return open_store(StoreOptions(**parse_store_spec(spec, command_config, config, str(path))))


def _records(store):
    from kconfigs.model import MATCH_ALL

    return store.describe(MATCH_ALL)


def migrate_quotas(source_spec: str, target_spec: str, command_config: str | None, *, dry_run: bool, prune: bool):
    """(plan, report): report None on a dry run or when already in sync.

    :raises VerificationFailed: the copy completed but the target reads back differently.
    """
    from kconfigs.applier import apply_plan
    from kconfigs.plan import build_plan
    from kconfigs.quotafile import desired_from_records

    source = open_spec(source_spec, command_config)
    try:
        desired = desired_from_records(_records(source))
    finally:
        source.close()
    target = open_spec(target_spec, command_config)
    try:
        plan = build_plan(desired, _records(target), prune=prune)
        if dry_run or plan.in_sync:
            return plan, None
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
    from kconfigs.retry import RetryNeeded, retry_until

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

    retry_until(attempt, deadline_s=VERIFY_DEADLINE_S, on_give_up=give_up, max_delay_s=1.0)
