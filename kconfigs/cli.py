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
    "init": "kconfigs.commands.store_init:init",
    "resolve": "kconfigs_enforcement.commands.resolve:resolve",
    "simulate": "kconfigs_enforcement.commands.simulate:simulate",
    "serve": "kconfigs_enforcement.commands.serve:serve",
    "analyze": "kconfigs_analysis.commands.analyze:analyze",
    "export": "kconfigs.commands.declarative:export",
    "diff": "kconfigs.commands.declarative:diff",
    "apply": "kconfigs.commands.declarative:apply",
    "migrate": "kconfigs.commands.declarative:migrate",
    "completion": "kconfigs.commands.completion:completion",
    "top": "kconfigs_analysis.commands.top:top",
}


def _module_exists(target: str) -> bool:
    module = target.split(":", 1)[0]
    return importlib.util.find_spec(module) is not None


class LazyGroup(click.Group):
    """A Click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, target in SUBCOMMANDS.items() if _module_exists(target))

    def _main_shell_completion(self, ctx_args, prog_name: str, complete_var: str | None = None) -> None:
        """On TAB only: completion that also knows the kafka-configs grammar and bash's ``:``."""
        import os

        if os.environ.get(complete_var or f"_{prog_name.replace('-', '_').replace('.', '_')}_COMPLETE".upper()):
            from kconfigs.commands.completion_shells import register

            register()
        super()._main_shell_completion(ctx_args, prog_name, complete_var)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(name)
        if target is None or not _module_exists(target):
            return None
        module_name, attr = target.split(":", 1)
        return getattr(importlib.import_module(module_name), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kconfigs", message="%(version)s (kconfigs)")
def cli() -> None:
    """Manage and enforce Apache Kafka client quotas.

    \b
    kafka-configs.sh command lines work unchanged (no subcommand):
      kconfigs --zookeeper HOST:PORT/CHROOT --alter --user alice --add-config producer_byte_rate=1024
      kconfigs --bootstrap-server HOST:PORT --describe --entity-type users
    with --zookeeper, --bootstrap-server, --bootstrap-controller, --command-config,
    --zk-tls-config-file, --describe, --alter, --entity-type, --entity-name, --entity-default,
    --user, --client, --ip, --user-defaults, --client-defaults, --ip-defaults, --add-config,
    --add-config-file, --delete-config ("kconfigs --alter --help" lists them), plus
    kconfigs' --store, --profile, --zk-auth and --dry-run. With no server named, the embedded
    store is used.

    The subcommands below are kconfigs' own; they take the same store options and
    KCONFIGS_* variables, and the kafka-configs entity options too.
    """


def main(argv: list[str] | None = None) -> None:
    """Run a subcommand; map KconfigsError to one stderr line + its exit code (compat mode does
    the same in ``kconfigs.__main__``)."""
    from kconfigs.errors import KconfigsError

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        # the raw words travel along: Click loses the order between --entity-name and --entity-default
        cli.main(args=args, prog_name="kconfigs", standalone_mode=False, obj={"argv": tuple(args)})
    except KconfigsError as err:
        click.echo(str(err), err=True)
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.UsageError as err:  # a mistyped option: one line naming the command, not a usage screen
        command = err.ctx.command_path if err.ctx is not None else "kconfigs"
        message = " ".join(err.format_message().split())
        click.echo(f"{command}: {message} (see {command} --help)", err=True)
        sys.exit(err.exit_code)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
