"""``python -m kconfigs`` and the console script's entry point.

Compat-mode command lines (the kafka-configs.sh hot path, run by scripts in loops) never import
Click: only the subcommands need it.
"""

from __future__ import annotations

import sys


def _compat_argv(argv: list[str]) -> bool:
    """kafka-configs.sh argv has no subcommand: its first token is an option (not -h/--version)."""
    return bool(argv) and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")


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
            print(usage_text(), file=sys.stderr)
        code = err.exit_code
    except KeyboardInterrupt:
        code = 130
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
