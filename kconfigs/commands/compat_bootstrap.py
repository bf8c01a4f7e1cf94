"""kafka-configs 3.x/4.x ``--bootstrap-server`` describe/alter of client quotas and SCRAM credentials."""

from __future__ import annotations

from kconfigs import args as A
from kconfigs import bootstrap_mode as B
from kconfigs import bootstrap_scram as S
from kconfigs.commands.compat_configs import configs_to_add, configs_to_delete
from kconfigs.errors import UsageError
from kconfigs.render import alter_done


def run_bootstrap(store, opts: A.ParsedOptions, types: list[str], names: list[str], texts: A.TextsSource) -> list[str]:
    if opts.has("describe"):
        lines = B.describe_lines(store.describe(B.describe_filter(types, names)))
        if S.describes_scram(types, names):
            lines += S.scram_describe_lines(store.user_scram_credentials().describe(names))
        return lines
    B.check_entity_names(types, names)  # before the configs are read, SCRAM alters included
    add, delete = configs_to_add(opts, texts), configs_to_delete(opts)
    from_file = opts.has("add-config-file")  # every line copies a loaded file as putAll does
    B.check_key_characters(add, texts, from_file)
    if B.check_alter_keys(types, names, add, delete, texts, from_file) == "scram":
        _alter_scram(store, opts, names, add, delete, texts, from_file)
    else:
        entity = B.alter_entity(types, names)
        update = B.quota_update(add, delete, entity, texts, from_file)
        store.alter(entity, update, validate_only=opts.has("dry-run"))
    return [alter_done(B.alter_done_line(types, names), opts.has("dry-run"))]


def _alter_scram(
    store,
    opts: A.ParsedOptions,
    names: list[str],
    add: dict[str, str],
    delete: list[str],
    texts: A.TextsSource,
    from_file: bool,
) -> None:
    if not add and not delete:
        S.check_keyless_alter(names, texts().java_tool)
        return  # Kafka sends an empty AlterUserScramCredentials: nothing changes
    upsertions = [S.scram_upsertion(key, add[key]) for key in B.scram_order(add, texts, from_file)]
    S.check_passwords(upsertions)
    if opts.has("dry-run"):
        raise UsageError(
            "--dry-run cannot check SCRAM credential changes: AlterUserScramCredentials has no validate-only mode"
        )
    from kconfigs.scram import random_salt

    store.user_scram_credentials().alter(names[0], upsertions, delete, random_salt())
