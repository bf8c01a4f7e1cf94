"""``kconfigs resolve``: the effective quota of a client, per key, and the znode it came from.

Kafka has no tool for this: the broker walks 8 user/client-id levels per quota type (and the ip
levels for connection rates). This command runs the same resolution (``enforcement``) over the
quotas read from any store, or from a quota file (``--quotas``, docs/quota-file.md)::

    [[quota]]
    entity = { user = "alice", client-id = { default = true } }
    producer_byte_rate = 1048576
"""

from __future__ import annotations

import json
from typing import Iterable

import click

from kconfigs.commands.options import check_ip_name, refuse_empty, store_options
from kconfigs.errors import UsageError, ValidationError
from kconfigs.keys import CLIENT_KEYS, QUOTA_KINDS
from kconfigs.sanitize import DEFAULT_NAME

CLIENT_QUOTA_KEYS = CLIENT_KEYS + (QUOTA_KINDS["producer_id"].name,)
IP_QUOTA_KEY = QUOTA_KINDS["connection"].name


def load_quota_file(path: str) -> list[tuple[dict, dict]]:
    """``(entity, quotas)`` records for ``QuotaSnapshot`` from a quota file (docs/quota-file.md:
    the same format ``kconfigs export`` writes and ``apply`` reads; TOML, JSON or YAML by suffix).

    :raises UsageError: the file cannot be read; :raises ValidationError: bad content
    """
    from kconfigs.quota_records import records_from_file

    return records_from_file(path)


def load_snapshot(quotas_path: str | None, store_kwargs: dict):
    """A ``QuotaSnapshot`` from ``--quotas FILE`` or else from the store named by the options
    (resolved either way, so a bad ``--profile`` or an empty ``--zookeeper`` is never ignored)."""
    from kconfigs.commands.options import pop_store_flags
    from kconfigs.profiles import resolve_store_options
    from kconfigs_enforcement import QuotaSnapshot

    flags, profile = pop_store_flags(store_kwargs)
    options = resolve_store_options(flags, profile)
    if quotas_path is not None:
        records: Iterable = load_quota_file(quotas_path)
    else:
        records = _store_records(options)
    try:
        return QuotaSnapshot.from_records(records)
    except ValueError as err:
        raise ValidationError(f"Invalid quota in store: {err}") from None


def _store_records(options) -> list:
    from kconfigs.quota_records import records_from_store
    from kconfigs.stores.factory import Access, open_store

    store = open_store(options, access=Access.READ)
    try:
        return records_from_store(store)
    finally:
        store.close()


def _format_value(value: float | None) -> str:
    if value is None:
        return "unlimited"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def resolution_rows(snapshot, user: str, client_id: str, ip: str | None) -> list[tuple[str, object]]:
    """(key, Resolved) for each client key, plus connection_creation_rate with an ip."""
    rows = [(key, snapshot.resolve(user, client_id, key)) for key in CLIENT_QUOTA_KEYS]
    if ip is not None:
        rows.append((IP_QUOTA_KEY, snapshot.resolve_ip(ip)))
    return rows


def render_text(rows) -> str:
    width = max(len(key) for key, _ in rows)
    values = [_format_value(r.value) for _, r in rows]
    value_width = max(len(v) for v in values)
    return "\n".join(
        f"{key:<{width}}  {value:<{value_width}}  {r.path or '-'}".rstrip() for (key, r), value in zip(rows, values)
    )


def render_json(rows) -> str:
    return json.dumps(
        {key: {"value": r.value, "level": r.level, "path": r.path, "metric_tags": r.metric_tags} for key, r in rows},
        sort_keys=False,
    )


#: --quotas FILE of resolve and simulate: the quotas from a file instead of a store
quota_file_option = click.option(
    "--quotas",
    "quotas_path",
    type=click.Path(dir_okay=False),
    callback=refuse_empty,
    help="TOML quota file instead of a store.",
)


@click.command()
@click.option("--user", required=True, callback=refuse_empty, help="User principal name (e.g. ANONYMOUS).")
@click.option("--client-id", "client_id", required=True, help="Client id (may be empty, as a client's can).")
@click.option("--ip", callback=refuse_empty, help="Client IP, to resolve connection_creation_rate too.")
@quota_file_option
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text")
@store_options
def resolve(user: str, client_id: str, ip: str | None, quotas_path: str | None, output: str, **store_kwargs) -> None:
    """Print each quota key's effective value for a client and the znode path it came from."""
    check_ip_name(ip)  # a client connects from an address: a mistyped one would resolve to nothing
    if ip == DEFAULT_NAME:  # the default ip's name, not an address a client connects from
        raise UsageError(f"--ip takes a client's address, not {DEFAULT_NAME}")
    snapshot = load_snapshot(quotas_path, store_kwargs)
    rows = resolution_rows(snapshot, user, client_id, ip)
    click.echo(render_json(rows) if output == "json" else render_text(rows))
