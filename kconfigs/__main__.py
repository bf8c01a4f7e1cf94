"""``python -m kconfigs`` and the console script's entry point.

Compat-mode command lines (the kafka-configs.sh hot path, run by scripts in loops) never import
Click: only the subcommands need it.
"""

from __future__ import annotations

import sys


def _compat_argv(argv: list[str]) -> bool:
    """kafka-configs.sh argv has no subcommand: its first token is an option. ``--help`` (or
    ``-h``/``--version``) first is kconfigs' own (Click) unless a kafka-configs option follows:
    ``--help --bootstrap-server b`` is kafka-configs' usage (stderr, exit 1)."""
    if not argv or not argv[0].startswith("-"):
        return False
    if argv[0] not in ("-h", "--help", "--version"):
        return True
    from kconfigs.args import is_option_token

    return any(is_option_token(token) for token in argv[1:])


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not _compat_argv(args):
        from kconfigs.cli import main as click_main

        click_main(args)
        return
    from kconfigs.commands.compat import run_compat, usage_text
    from kconfigs.errors import KconfigsError

    try:
        code = run_compat(args)
    except KconfigsError as err:
        print(str(err), file=sys.stderr)
        if getattr(err, "show_usage", False):
            print(usage_text(), file=sys.stderr)  # no banner: Kafka's printUsageAndDie prints none
        code = err.exit_code
    except KeyboardInterrupt:
        code = 130
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
