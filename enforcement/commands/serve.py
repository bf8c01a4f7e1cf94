"""``kconfigs serve``: run the quota-enforcing Kafka gateway (see docs/gateway.md)."""

from __future__ import annotations

import click

from kconfigs.commands.options import refuse_empty, store_options


@click.command("serve")
@click.option(
    "--upstream",
    "upstreams",
    help="Broker bootstrap address(es), host:port[,host:port...] (default: the --bootstrap-server cluster).",
)
@click.option("--listen", callback=refuse_empty, help="Bootstrap listener host:port (default 127.0.0.1:9092).")
@click.option(
    "--advertised-host",
    callback=refuse_empty,
    help="Host name clients use to reach this gateway (default: the --listen host; required with 0.0.0.0).",
)
@store_options
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    callback=refuse_empty,
    help="TOML file with further gateway settings.",
)
@click.option("--metrics-listen", help="Prometheus endpoint host:port (default 127.0.0.1:9404; '' to disable).")
@click.option(
    "--usage-log",
    "usage_log_path",
    callback=refuse_empty,
    help="Append a JSON-lines usage log here (docs/usage-log.md).",
)
@click.option(
    "--fleet",
    "fleet_name",
    callback=refuse_empty,
    help="Share each quota with the other instances of this fleet name (docs/gateway.md).",
)
@click.option(
    "--quota-admin",
    type=click.Choice(["auto", "gateway", "passthrough"]),
    help="Who answers DescribeClientQuotas/AlterClientQuotas (default auto).",
)
def serve(config_file: str | None, **options) -> None:
    """Run a Kafka-protocol gateway in front of brokers that enforces client quotas.

    The quotas come from the store every other command would use (--zookeeper, --bootstrap-server,
    --store, a profile ...), a Kafka cluster's own included."""
    from kconfigs.commands.options import pop_store_flags
    from kconfigs_enforcement.gateway.config import config_from_mapping, load_toml
    from kconfigs_enforcement.gateway.runner import resolve_gateway_store, run

    flags, profile = pop_store_flags(options)
    base = config_from_mapping(load_toml(config_file)) if config_file else None
    config = config_from_mapping(options, base)
    config, store = resolve_gateway_store(config, flags, profile)
    run(config, store)
