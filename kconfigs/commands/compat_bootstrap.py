"""kafka-configs 3.x ``--bootstrap-server`` describe/alter of client quotas."""

from __future__ import annotations

from kconfigs import args as A
from kconfigs import bootstrap_mode as B
from kconfigs.commands.compat import configs_to_add, configs_to_delete
from kconfigs.errors import UsageError


def run_bootstrap(store, opts: A.ParsedOptions, types: list[str], names: list[str]) -> list[str]:
    if opts.has("describe"):
        return B.describe_lines(store.describe(B.describe_filter(types, names)))
    add, delete = configs_to_add(opts), configs_to_delete(opts)
    if B.check_alter_keys(types, names, add, delete) == "scram":
        raise UsageError("kconfigs does not manage SCRAM credentials over --bootstrap-server; use kafka-configs.sh")
    entity = B.alter_entity(types, names)
    store.alter(entity, B.quota_update(add, delete), validate_only=opts.has("dry-run"))
    return [B.alter_done_line(types, names)]
