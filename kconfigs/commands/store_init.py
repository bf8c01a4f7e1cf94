"""kconfigs init: create an embedded store file, the one way a named store comes to exist."""

from __future__ import annotations

import click

from kconfigs.commands.options import pop_store_flags, store_options


@click.command()
@store_options
def init(**kwargs) -> None:
    """Create an empty embedded store (--store PATH, KCONFIGS_STORE or a profile's store;
    default: the default store). Writes to a named store that does not exist are refused, so
    that a mistyped path never becomes a new store; an existing store is left as it is."""
    from pathlib import Path

    from kconfigs.errors import UsageError
    from kconfigs.profiles import resolve_store_options
    from kconfigs.stores.sqlite import SqliteStore, default_store_path

    flags, profile = pop_store_flags(kwargs)
    options = resolve_store_options(flags, profile)
    if options.zookeeper or options.bootstrap_server or options.bootstrap_controller:
        raise UsageError(f"kconfigs init creates embedded stores only; {options.origin} names a server")
    path = Path(options.store_path) if options.store_path else default_store_path()
    existed = path.exists()
    if existed:  # opened read-only: refuses a file that is not a kconfigs store, changes nothing
        SqliteStore(path, read_only=True).close()
    else:
        SqliteStore(path).close()
    click.echo(f"Embedded store {path} {'already exists (left as it is)' if existed else 'created'}")
