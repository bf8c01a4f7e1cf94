"""Plans and apply reports as text (coloured by rich on a terminal, plain otherwise) or JSON.

JSON is one stable object per invocation (for CI)::

    {"in_sync": false, "prune": true, "entities": {"add": 1, "change": 0, "remove": 0},
     "keys": {"add": 2, "change": 0, "remove": 0}, "left_alone": 0,
     "changes": [{"entity": {"user": "alice", "client-id": null}, "action": "add",
                  "keys": [{"key": "producer_byte_rate", "action": "add", "old": null, "new": 1048576}]}]}

``null`` in an entity is the default entity, as in Kafka's API.
"""

from __future__ import annotations

import json

from kconfigs.applier import ApplyReport
from kconfigs.plan import Action, EntityPlan, Plan
from kconfigs.render import zk_entity_text

_SIGNS = {Action.ADD: "+", Action.CHANGE: "~", Action.REMOVE: "-"}
_STYLES = {Action.ADD: "green", Action.CHANGE: "yellow", Action.REMOVE: "red"}


def _number(value) -> str:
    return "-" if value is None else (repr(value) if isinstance(value, float) else str(value))


#: after a key only the store holds, in a diff: apply leaves it unless told to prune
PRUNE_ONLY_MARK = "  (removed only by apply --prune)"


def plan_lines(plan: Plan, mark_prune_only: bool = False) -> list[tuple[str, Action]]:
    """(line, action) pairs: one line per entity, then one indented line per key;
    ``mark_prune_only`` marks the removals (keys only the store holds) that apply makes only
    with --prune."""
    lines = []
    for item in plan.entities:
        lines.append((f"{_SIGNS[item.action]} {zk_entity_text(item.entity)}", item.action))
        for change in item.changes:
            if change.action is Action.CHANGE:
                text = f"{change.key}: {_number(change.old)} -> {_number(change.new)}"
            else:
                text = f"{change.key} = {_number(change.new if change.new is not None else change.old)}"
            mark = PRUNE_ONLY_MARK if mark_prune_only and change.action is Action.REMOVE else ""
            lines.append((f"    {_SIGNS[change.action]} {text}{mark}", change.action))
    return lines


def summary_line(plan: Plan, prune: bool) -> str:
    if plan.in_sync:
        text = "In sync: no changes."
    else:
        counts = plan.entity_counts()
        keys = plan.key_counts()
        text = (
            f"{counts['add']} to add, {counts['change']} to change, {counts['remove']} to remove "
            f"(entities); {keys['add']} / {keys['change']} / {keys['remove']} keys."
        )
    if plan.left_alone and not prune:
        text += f" {plan.left_alone} key(s) in the store but not in the file are kept (use --prune to remove)."
    return text


def print_plan(plan: Plan, prune: bool, colour: bool, echo, mark_prune_only: bool = False) -> None:
    """Write the plan with ``echo`` (plain) or to a rich console on a terminal (colour)."""
    if colour:
        from rich.console import Console
        from rich.text import Text

        console = Console()
        for line, action in plan_lines(plan, mark_prune_only):
            console.print(Text(line, style=_STYLES[action]))  # Text: names are never markup
        console.print(Text(summary_line(plan, prune), style="bold"))
        return
    for line, _ in plan_lines(plan, mark_prune_only):
        echo(line)
    echo(summary_line(plan, prune))


def _entity_json(item: EntityPlan) -> dict:
    return {
        "entity": item.entity.to_json(),
        "action": item.action.value,
        "keys": [{"key": c.key, "action": c.action.value, "old": c.old, "new": c.new} for c in item.changes],
    }


def plan_json(plan: Plan, prune: bool) -> dict:
    return {
        "in_sync": plan.in_sync,
        "prune": prune,
        "entities": plan.entity_counts(),
        "keys": plan.key_counts(),
        "left_alone": 0 if prune else plan.left_alone,
        "changes": [_entity_json(i) for i in plan.entities],
    }


def report_json(plan: Plan, prune: bool, report: ApplyReport | None) -> str:
    """The plan, plus what happened to it (``report`` None = dry run)."""
    out = plan_json(plan, prune)
    out["dry_run"] = report is None
    if report is not None:
        out["complete"] = report.complete
        out["applied"] = [i.entity.to_json() for i in report.applied]
        out["failed"] = [{"entity": i.entity.to_json(), "error": why} for i, why in report.failed]
        out["unknown"] = [i.entity.to_json() for i in report.unknown]
        out["not_attempted"] = [i.entity.to_json() for i in report.not_attempted]
    return json.dumps(out, indent=2, ensure_ascii=False)


def report_lines(report: ApplyReport) -> list[str]:
    """For stderr after a partial apply: every entity not applied, and why."""
    lines = [f"not applied: {zk_entity_text(i.entity)}: {why}" for i, why in report.failed]
    lines += [f"unknown (connection lost after sending): {zk_entity_text(i.entity)}" for i in report.unknown]
    lines += [f"not attempted: {zk_entity_text(i.entity)}" for i in report.not_attempted]
    return lines
