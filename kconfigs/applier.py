"""Carry out a plan on a store, batch by batch, and account for every entity.

Each entity goes through ``Store.alter_many`` with :func:`kconfigs.plan.cas_update` (atomic per
entity, re-checked against what the plan saw). Batches bound what one call holds and let the
caller draw progress. Nothing is raised for a failure part-way: the report says which entities
were applied, which failed (with why), which have an unknown outcome (the connection went after
the write was sent) and which were not attempted; a re-run re-plans and converges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from kconfigs.errors import KconfigsError, PartialFailure, StoreUnavailable
from kconfigs.model import QuotaEntity
from kconfigs.plan import EntityPlan, Plan, cas_update
from kconfigs.stores.base import AlterManyFailed

DEFAULT_BATCH = 1000  # entities per alter_many call: progress granularity, bounded memory


@dataclass
class ApplyReport:
    applied: list[EntityPlan] = field(default_factory=list)
    failed: list[tuple[EntityPlan, str]] = field(default_factory=list)
    unknown: list[EntityPlan] = field(default_factory=list)
    not_attempted: list[EntityPlan] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not (self.failed or self.unknown or self.not_attempted)

    def summary(self) -> str:
        total = len(self.applied) + len(self.failed) + len(self.unknown) + len(self.not_attempted)
        parts = [f"Applied {len(self.applied)} of {total} entity changes"]
        if self.failed:
            first, why = self.failed[0]
            parts.append(f"{len(self.failed)} failed (first: {first.entity.path}: {why})")
        if self.unknown:
            parts.append(f"{len(self.unknown)} with unknown outcome (connection lost)")
        if self.not_attempted:
            parts.append(f"{len(self.not_attempted)} not attempted")
        return "; ".join(parts) + ("" if self.complete else "; re-run to converge")


def apply_plan(
    store, plan: Plan, *, batch_size: int = DEFAULT_BATCH, on_progress: Callable[[int], None] | None = None
) -> ApplyReport:
    """Apply ``plan``; stop early only when the store became unreachable."""
    report = ApplyReport()
    items = list(plan.entities)
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        stop = _apply_batch(store, batch, report)
        if on_progress:
            on_progress(len(batch))
        if stop:
            report.not_attempted.extend(items[start + batch_size :])
            break
    return report


def _apply_batch(store, batch: list[EntityPlan], report: ApplyReport) -> bool:
    """Apply one batch into ``report``; True if the store is gone and the rest should wait."""
    by_entity: dict[QuotaEntity, EntityPlan] = {item.entity: item for item in batch}
    try:
        store.alter_many([(item.entity, cas_update(item)) for item in batch])
    except AlterManyFailed as err:
        report.applied.extend(by_entity[r.entity] for r in err.applied)
        report.failed.extend((by_entity[e], str(why)) for e, why in err.failed)
        report.unknown.extend(by_entity[e] for e in err.unknown)
        report.not_attempted.extend(by_entity[e] for e in err.not_attempted)
        return err.store_lost or bool(err.unknown) or bool(err.not_attempted)
    except PartialFailure:  # a store that cannot say which ones: find out on the re-run
        report.unknown.extend(batch)
        return True
    except KconfigsError as err:  # raised before anything of the batch was written
        report.failed.extend((item, str(err)) for item in batch)
        return isinstance(err, StoreUnavailable)
    report.applied.extend(batch)
    return False
