"""``kconfigs top``: who is using how much of their quota, live.

Reads the quota metrics of brokers (their jmx_exporter ``/metrics``, or a Prometheus server) and
of kconfigs gateways (their metrics listener), sums them per entity as Kafka's per-broker quotas
add up, and sets each against the effective quota and its level from the usual store options.
On a terminal: a full screen refreshed every ``--interval`` s, with keys to sort, filter and
pause. Piped, or with ``--once``: one snapshot (``-o table`` or ``-o json``), and with
``--fail-above PCT`` exit code 3 when an entity is over PCT % of its quota.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field, replace

import click

from kconfigs.clock import MONOTONIC
from kconfigs.commands.options import store_options
from kconfigs.errors import KconfigsError, UsageError

#: exit code of ``--fail-above`` when some entity is above the threshold
ABOVE_THRESHOLD_EXIT = 3
#: the quotas are read again this often (a store read costs more than a scrape)
QUOTA_REFRESH_MS = 30_000


@dataclass
class Poller:
    """Reads every source once per refresh, keeping each unreachable source's last readings."""

    sources: list
    load_quotas: object  # () -> QuotaSnapshot
    quota_source: str
    snapshot: object = None
    quota_error: str | None = None
    quotas_read_at_ms: int | None = None
    last: dict = field(default_factory=dict)  # source name -> readings
    previous_rates: dict = field(default_factory=dict)

    def poll(self, now_ms: int):
        from kconfigs_analysis.top_model import build_rows
        from kconfigs_analysis.top_sources import SourceUnreachable
        from kconfigs_analysis.top_view import Screen, SourceState

        self._refresh_quotas(now_ms)
        states, stale = [], set()
        for source in self.sources:
            try:
                fresh = source.read()
            except SourceUnreachable as err:
                states.append(SourceState(source.name, str(err)))
                for name, readings in self.last.items():
                    if name == source.name or name.startswith(source.name + " "):
                        stale.update(readings)
                continue
            for name in [n for n in self.last if n == source.name or n.startswith(source.name + " ")]:
                del self.last[name]
            self.last.update(fresh)
            states.append(SourceState(source.name))
        rows = build_rows(self.last, self.snapshot, self.previous_rates)
        self.previous_rates = {row.key: row.rate for row in rows}
        return Screen(rows, states, self.quota_source, self.quota_error, stale=frozenset(stale))

    def _refresh_quotas(self, now_ms: int) -> None:
        if self.snapshot is not None and now_ms - self.quotas_read_at_ms < QUOTA_REFRESH_MS:
            return
        try:
            self.snapshot = self.load_quotas()
            self.quota_error = None
        except KconfigsError as err:
            if self.snapshot is None:
                raise
            self.quota_error = str(err)
        self.quotas_read_at_ms = now_ms


def _sources(gateways, jmx_exporters, prometheus_urls, prometheus_match):
    from kconfigs_analysis.top_sources import PrometheusServer, ScrapedEndpoint, metrics_url

    sources = [ScrapedEndpoint(f"gateway {a}", metrics_url(a)) for a in gateways]
    sources += [ScrapedEndpoint(f"jmx {a}", metrics_url(a)) for a in jmx_exporters]
    sources += [PrometheusServer(f"prometheus {u}", u, prometheus_match) for u in prometheus_urls]
    if not sources:
        raise UsageError(
            "Name at least one source: --gateway HOST:PORT, --jmx-exporter HOST:PORT or --prometheus-url URL"
        )
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise UsageError("A source is named twice: each would count the same traffic again")
    return sources


def _quota_loader(quotas_path: str | None, store_kwargs: dict):
    """(loader, description): the snapshot comes from --quotas or the store options, as for resolve."""
    from kconfigs.commands.options import pop_store_flags
    from kconfigs.profiles import resolve_store_options
    from kconfigs_enforcement.commands.resolve import load_snapshot

    flags, profile = pop_store_flags(dict(store_kwargs))
    options = resolve_store_options(flags, profile)
    if quotas_path is not None:
        if any(flags.values()) or profile:
            raise UsageError("Give the quotas once: --quotas or a store option, not both")
        description = f"file {quotas_path}"
    else:
        from kconfigs_enforcement.gateway.health import admin_security_protocol, store_description

        description = (
            f"{store_description(options, admin_security_protocol(options.command_config))} ({options.origin})"
        )
    return (lambda: load_snapshot(quotas_path, dict(store_kwargs))), description


def _print_once(screen, output: str, fail_above: float | None) -> int:
    from kconfigs_analysis.top_model import above
    from kconfigs_analysis.top_view import plain_table, snapshot_document, visible_rows

    if output == "json":
        click.echo(json.dumps(snapshot_document(screen), indent=2))
    else:
        click.echo(plain_table(screen))
    if fail_above is not None and above(visible_rows(screen), fail_above):
        return ABOVE_THRESHOLD_EXIT
    return 0


@click.command()
@click.option(
    "--gateway", "gateways", multiple=True, metavar="HOST:PORT", help="A kconfigs gateway's metrics listener."
)
@click.option(
    "--jmx-exporter",
    "jmx_exporters",
    multiple=True,
    metavar="HOST:PORT|URL",
    help="A broker's jmx_exporter (scraped directly; repeat for each broker).",
)
@click.option(
    "--prometheus-url", "prometheus_urls", multiple=True, metavar="URL", help="A Prometheus server (instant queries)."
)
@click.option("--prometheus-match", metavar="MATCHERS", help='More label matchers for Prometheus, e.g. job="kafka".')
@click.option("--quotas", "quotas_path", type=click.Path(dir_okay=False), help="Quota file instead of a store.")
@click.option(
    "--interval", type=click.FloatRange(0.2, 3600), default=2.0, show_default=True, help="Seconds between refreshes."
)
@click.option("--once", is_flag=True, help="Print one snapshot and exit (the default when stdout is not a terminal).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option(
    "--sort",
    type=click.Choice(["percent", "rate", "throttle", "user", "client", "kind"]),
    default="percent",
    show_default=True,
)
@click.option(
    "--filter", "filter_text", default="", metavar="TEXT", help="Only users, client-ids or ips containing TEXT."
)
@click.option("--per-source", is_flag=True, help="Show each source's share of a rate.")
@click.option("--all", "show_idle", is_flag=True, help="Also show sensors that measured nothing in their window.")
@click.option(
    "--fail-above",
    type=click.FloatRange(0, None),
    metavar="PCT",
    help=f"With a snapshot: exit {ABOVE_THRESHOLD_EXIT} when an entity uses more than PCT percent of its quota.",
)
@store_options
def top(gateways, jmx_exporters, prometheus_urls, prometheus_match, quotas_path, interval, once, output, **options):
    """Usage against the effective quota, per entity, live (like top)."""
    fail_above = options.pop("fail_above")
    screen_options = {name: options.pop(name) for name in ("sort", "filter_text", "per_source", "show_idle")}
    sources = _sources(gateways, jmx_exporters, prometheus_urls, prometheus_match)
    load_quotas, description = _quota_loader(quotas_path, options)
    poller = Poller(sources, load_quotas, description)
    interactive = not once and sys.stdout.isatty() and sys.stdin.isatty()
    if interactive and (fail_above is not None or output == "json"):
        raise UsageError(f"{'--fail-above' if fail_above is not None else '-o json'} goes with a snapshot: add --once")
    if not interactive:
        screen = replace(poller.poll(MONOTONIC.now_ms()), refresh_s=interval, **screen_options)
        sys.exit(_print_once(screen, output, fail_above))
    from kconfigs_analysis.top_terminal import run_interactive

    run_interactive(poller, interval, screen_options)
