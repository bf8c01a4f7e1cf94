"""kafka-configs 2.8.2 ZooKeeper-mode describe/alter over the ZooKeeper or embedded store."""

from __future__ import annotations

from typing import Callable

from kconfigs import args as A
from kconfigs.commands.compat_configs import configs_to_add, configs_to_delete
from kconfigs.compat_warnings import added_and_deleted_warning
from kconfigs.errors import ValidationError
from kconfigs.model import DEFAULT, QuotaRecord
from kconfigs.render import alter_done, zk_alter_line, zk_describe_line
from kconfigs.service import ConfigChange, alter, prepare_add
from kconfigs.targets import describe_target, entity_of, zk_pairs


def run_zk(
    store,
    opts: A.ParsedOptions,
    types: list[str],
    names: list[str],
    is_valid_ip: Callable[[str], bool],
    warnings: list[str],
) -> list[str]:
    """The output lines; ``warnings`` gets a line for what kafka-configs does that was not meant."""
    if opts.has("describe"):
        return describe_lines(store, types, names)
    add, delete = configs_to_add(opts), configs_to_delete(opts)
    warnings.extend(added_and_deleted_warning(add, delete))
    entity = entity_of(zk_pairs(types, names, alter=True))
    if entity.ip is not None and entity.ip is not DEFAULT and not is_valid_ip(entity.ip):
        raise ValidationError(f"{entity.ip} is not a valid IP or resolvable host.")
    change = ConfigChange(add=prepare_add(entity, add, _random_salt), delete=delete)
    alter(store, entity, change, dry_run=opts.has("dry-run"))
    return [alter_done(zk_alter_line(entity), opts.has("dry-run"))]


def _random_salt() -> bytes:
    from kconfigs.scram import random_salt  # only a SCRAM credential needs a salt

    return random_salt()


def describe_lines(store, types: list[str], names: list[str]) -> list[str]:
    target = describe_target(zk_pairs(types, names, alter=False))
    records = store.describe(target.entity_filter)
    if target.exact is not None:
        found = records[0] if records else QuotaRecord(target.exact, {})
        return [zk_describe_line(found)]
    if target.skip_empty_users:
        records = [r for r in records if r.configs]
    return [zk_describe_line(r) for r in records]
