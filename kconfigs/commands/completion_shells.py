"""Click's shell-completion classes, taught two things Click's own do not know.

1. Bash splits words at the characters of ``COMP_WORDBREAKS`` (``:`` and ``=`` among them), so
   ``--zookeeper zk1:2181/kafka --user <TAB>`` reached Click as the words ``zk1``, ``:``,
   ``2181/kafka`` and nothing was offered. The bash script here sends the line up to the cursor
   (``COMP_LINE``/``COMP_POINT``), split as the shell splits arguments, and each answer is cut to
   the part after the last word break, which is all bash replaces.
2. The kafka-configs grammar (``kconfigs --describe --entity-type <TAB>``) has no Click command:
   its options and values are completed here from ``kconfigs.args.OPTIONS``.
"""

from __future__ import annotations

import os

from click.shell_completion import (
    BashComplete,
    CompletionItem,
    FishComplete,
    ZshComplete,
    add_completion_class,
    split_arg_string,
)

LINE_VAR = "KCONFIGS_COMP_LINE"
WORDBREAKS_VAR = "KCONFIGS_COMP_WORDBREAKS"
DEFAULT_WORDBREAKS = " \t\n\"'><=;|&(:"  # bash's default COMP_WORDBREAKS

_SOURCE_BASH = """\
%(complete_func)s() {
    local IFS=$'\\n'
    local response

    response=$(env %(line_var)s="${COMP_LINE:0:$COMP_POINT}" %(wordbreaks_var)s="$COMP_WORDBREAKS" \\
COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD %(complete_var)s=bash_complete $1)

    for completion in $response; do
        IFS=',' read type value <<< "$completion"

        if [[ $type == 'dir' ]]; then
            COMPREPLY=()
            compopt -o dirnames
        elif [[ $type == 'file' ]]; then
            COMPREPLY=()
            compopt -o default
        elif [[ $type == 'plain' ]]; then
            COMPREPLY+=($value)
            [[ $value == *= ]] && compopt -o nospace  # KEY= waits for its value
        fi
    done

    return 0
}

%(complete_func)s_setup() {
    complete -o nosort -F %(complete_func)s %(prog_name)s
}

%(complete_func)s_setup;
"""


class _BothGrammars:
    """Completes a kafka-configs command line itself; a subcommand line as Click does."""

    def get_completions(self, args: list[str], incomplete: str) -> list[CompletionItem]:
        from kconfigs.commands import compat_completion

        if compat_completion.is_compat_line(args, incomplete):
            return compat_completion.completions(args, incomplete)
        return super().get_completions(args, incomplete)  # type: ignore[misc]


class KconfigsBashComplete(_BothGrammars, BashComplete):
    """Bash, reading the line itself rather than bash's words (see the module docstring)."""

    source_template = _SOURCE_BASH

    def source_vars(self) -> dict:
        return {**super().source_vars(), "line_var": LINE_VAR, "wordbreaks_var": WORDBREAKS_VAR}

    def get_completion_args(self) -> tuple[list[str], str]:
        line = os.environ.get(LINE_VAR)
        if line is None:  # a script from before: bash's words
            return super().get_completion_args()
        words = split_arg_string(line)
        ends_word = not line or line[-1] in " \t\n"
        incomplete = "" if ends_word or not words else words.pop()
        self._incomplete = incomplete
        return words[1:], incomplete

    def format_completion(self, item: CompletionItem) -> str:
        """Bash replaces only what follows the last word break in the word being completed."""
        incomplete = getattr(self, "_incomplete", "")
        breaks = os.environ.get(WORDBREAKS_VAR, DEFAULT_WORDBREAKS)
        cut = max((incomplete.rfind(c) for c in breaks), default=-1) + 1
        value = item.value[cut:] if cut and item.value.startswith(incomplete[:cut]) else item.value
        return f"{item.type},{value}"


class KconfigsZshComplete(_BothGrammars, ZshComplete):
    pass


class KconfigsFishComplete(_BothGrammars, FishComplete):
    pass


def register() -> None:
    for cls in (KconfigsBashComplete, KconfigsZshComplete, KconfigsFishComplete):
        add_completion_class(cls)
