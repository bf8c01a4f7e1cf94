"""The ``kconfigs`` entry point.

Subcommands (``describe``, ``alter``, ``serve``, ``analyze`` ...) for humans and scripts,
registered lazily so that ``--help`` never imports kazoo, kafka, rich or pyspark. kafka-configs.sh
command lines (compat mode) are dispatched before this module loads: see ``kconfigs.__main__``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click  # ~20 ms; compat mode never imports this module

# name -> "module:attribute". Modules load only when their command runs (or its help is shown).
SUBCOMMANDS: dict[str, str] = {
    "describe": "kconfigs.commands.configs:describe",
    "alter": "kconfigs.commands.configs:alter",
    "delete": "kconfigs.commands.configs:delete",
    "resolve": "kconfigs_enforcement.commands.resolve:resolve",
    "simulate": "kconfigs_enforcement.commands.simulate:simulate",
    "serve": "kconfigs_enforcement.commands.serve:serve",
    "analyze": "kconfigs_analysis.commands.analyze:analyze",
    "export": "kconfigs.commands.declarative:export",
    "diff": "kconfigs.commands.declarative:diff",
    "apply": "kconfigs.commands.declarative:apply",
    "migrate": "kconfigs.commands.declarative:migrate",
    "completion": "kconfigs.commands.completion:completion",
}


def _module_exists(target: str) -> bool:
    module = target.split(":", 1)[0]
    return importlib.util.find_spec(module) is not None


class LazyGroup(click.Group):
    """A Click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, target in SUBCOMMANDS.items() if _module_exists(target))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(name)
        if target is None or not _module_exists(target):
            return None
        module_name, attr = target.split(":", 1)
        return getattr(importlib.import_module(module_name), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kconfigs")
def cli() -> None:
    """Manage and enforce Apache Kafka client quotas.

    kafka-configs.sh arguments (--zookeeper/--bootstrap-server, --describe/--alter, ...) are
    accepted as they are; the subcommands below are kconfigs' own.
    """


def main(argv: list[str] | None = None) -> None:
    """Run a subcommand; map KconfigsError to one stderr line + its exit code (the only place)."""
    from kconfigs.errors import KconfigsError

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=args, prog_name="kconfigs", standalone_mode=False)
    except KconfigsError as err:
        click.echo(str(err), err=True)
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
