"""``kconfigs serve``: run the quota-enforcing Kafka gateway (see docs/gateway.md)."""

from __future__ import annotations

import click

from kconfigs.commands.options import refuse_empty


@click.command("serve")
@click.option("--upstream", "upstreams", help="Broker bootstrap address(es), host:port[,host:port...].")
@click.option("--listen", callback=refuse_empty, help="Bootstrap listener host:port (default 127.0.0.1:9092).")
@click.option(
    "--advertised-host",
    callback=refuse_empty,
    help="Host name clients use to reach this gateway (default: the --listen host; required with 0.0.0.0).",
)
@click.option("--zookeeper", callback=refuse_empty, help="Read quotas from ZooKeeper (host:port[/chroot]).")
@click.option("--store", "store_path", callback=refuse_empty, help="Read quotas from the embedded store at PATH.")
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
    "--quota-admin",
    type=click.Choice(["auto", "gateway", "passthrough"]),
    help="Who answers DescribeClientQuotas/AlterClientQuotas (default auto).",
)
def serve(config_file: str | None, **options) -> None:
    """Run a Kafka-protocol gateway in front of brokers that enforces client quotas."""
    from kconfigs_enforcement.gateway.config import config_from_mapping, load_toml
    from kconfigs_enforcement.gateway.runner import run

    base = config_from_mapping(load_toml(config_file)) if config_file else None
    run(config_from_mapping(options, base).validate())
