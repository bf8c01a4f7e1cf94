"""The ``--add-config`` / ``--add-config-file`` / ``--delete-config`` values of a kafka-configs
command line, shared by the ZooKeeper and bootstrap compat paths."""

from __future__ import annotations

from kconfigs import args as A
from kconfigs.errors import UsageError


def configs_to_add(opts: A.ParsedOptions, texts: A.TextsSource | None = None) -> dict[str, str]:
    """``--add-config`` (bracket grammar) or ``--add-config-file`` (Java properties, verbatim);
    ``texts`` words a malformed ``--add-config`` as the Kafka line does (2.8 by default)."""
    from kconfigs.config_grammar import AddConfigFormatError, parse_add_config
    from kconfigs.java_properties import read_properties

    text = opts.value("add-config")
    if text is not None:
        try:
            return parse_add_config(text)
        except AddConfigFormatError:
            if texts is None:
                raise
            raise UsageError(texts().bad_add_config) from None
    path = opts.value("add-config-file")
    if path is None:
        return {}
    try:
        return read_properties(path)
    except OSError as err:
        raise UsageError(f"Cannot read --add-config-file {path}: {err.strerror}") from None


def configs_to_delete(opts: A.ParsedOptions) -> list[str]:
    from kconfigs.config_grammar import parse_delete_config

    return parse_delete_config(opts.values("delete-config"))
