"""TAB completion in a real interactive bash (on a pseudo-terminal) with the committed
completions/kconfigs.bash: both grammars, and words after a ``host:port`` value, which bash
splits at ``:`` (COMP_WORDBREAKS) before any completion function sees them."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import run_main

REPO = Path(__file__).resolve().parents[2]
#: a TAB runs ``kconfigs`` (an interpreter start, perhaps a store read): wait this long for it
ANSWER_TIMEOUT_S = 20.0


class Bash:
    """An interactive bash on a pseudo-terminal that has sourced kconfigs' completion."""

    def __init__(self, tmp_path: Path):
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        wrapper = bin_dir / "kconfigs"
        wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m kconfigs "$@"\n')
        wrapper.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_")}
        env.update(
            PATH=f"{bin_dir}:{env['PATH']}",
            HOME=str(tmp_path),
            TERM="dumb",
            PS1="$ ",
            INPUTRC="/dev/null",
            KCONFIGS_HOME=str(tmp_path / "home"),
            XDG_CONFIG_HOME=str(tmp_path / "config"),
        )
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            ["bash", "--norc", "--noprofile", "-i"], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
        )
        os.close(slave)
        self.poller = select.poll()
        self.poller.register(self.master, select.POLLIN)
        self.run(f"stty cols 1000; source {REPO / 'completions' / 'kconfigs.bash'}")
        self.run("bind 'set show-all-if-ambiguous on'")

    def _read_until(self, wanted: str | None, timeout_s: float = ANSWER_TIMEOUT_S) -> str:
        """What the terminal shows until ``wanted`` (a regular expression) matches it (None:
        for ``timeout_s``)."""
        shown, deadline = "", time.monotonic() + timeout_s
        while time.monotonic() < deadline and (wanted is None or not re.search(wanted, shown, re.DOTALL)):
            if self.poller.poll(50):
                shown += os.read(self.master, 4096).decode("utf-8", "replace")
        return shown

    def run(self, command: str) -> None:
        os.write(self.master, command.encode() + b"; echo DONE-$((1+1))\r")
        self._read_until("DONE-2")  # the output, not the command line echoed

    def tab(self, line: str) -> str:
        """Type ``line`` and TAB; what the terminal shows once the answer is in, as the line
        after completion (echoed by ``echo``) and any list of candidates bash printed."""
        os.write(self.master, line.encode() + b"\t")
        time.sleep(0.2)
        self._read_until(None, 0.1)
        # Then run the line as bash left it, inside an echo: ^A goes to its start, ^E to its end.
        os.write(self.master, b"\x01echo LINE:\x05:END\r")
        shown = self._read_until("\nLINE:.*:END", ANSWER_TIMEOUT_S)
        return shown.split("\nLINE:")[-1].split(":END")[0]

    def candidates(self, line: str, last: str) -> str:
        """Type ``line`` and TAB; the list of candidates bash printed, up to ``last``."""
        self._read_until(None, 0.3)  # what an earlier command left (its prompt)
        os.write(self.master, line.encode() + b"\t")
        shown = self._read_until(last, ANSWER_TIMEOUT_S)
        os.write(self.master, b"\x15")  # ^U: clear the line
        self._read_until(None, 0.3)
        return shown.partition("\n")[2].partition("\n")[0]  # the line after the one typed

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)
        os.close(self.master)


@pytest.fixture
def bash(tmp_path):
    shell = Bash(tmp_path)
    yield shell
    shell.close()


def test_the_kafka_configs_grammar_completes_options_and_entity_types(bash):
    """``kconfigs --describe --entity-type <TAB>`` offered nothing."""
    listed = bash.candidates("kconfigs --describe --entity-type ", "ips")
    assert listed.split() == ["users", "clients", "ips"], listed
    assert bash.tab("kconfigs --describe --entity-type us") == "kconfigs --describe --entity-type users "
    assert bash.tab("kconfigs --descr") == "kconfigs --describe "
    assert bash.tab("kconfigs --alter --client c --add-config producer_byte_rate=5,consumer_by") == (
        "kconfigs --alter --client c --add-config producer_byte_rate=5,consumer_byte_rate="
    )


def test_completion_goes_on_after_a_host_port_value(bash):
    """Bash splits ``127.0.0.1:2181`` into three words at ``:``; the subcommands' and the
    kafka-configs grammar's completion both went quiet after it."""
    assert bash.tab("kconfigs --zookeeper 127.0.0.1:2181/kafka --describe --entity-type cl") == (
        "kconfigs --zookeeper 127.0.0.1:2181/kafka --describe --entity-type clients "
    )
    assert bash.tab("kconfigs export --bootstrap-server 127.0.0.1:9092 --entity-type i") == (
        "kconfigs export --bootstrap-server 127.0.0.1:9092 --entity-type ips "
    )


@pytest.mark.parametrize("grammar", ["kafka-configs", "subcommand"])
def test_entity_names_come_from_the_zookeeper_after_its_host_port(bash, isolated_env, zk_connect, grammar):
    assert (
        run_main("--zookeeper", zk_connect, "--alter", "--user", "alice", "--add-config", "producer_byte_rate=1")[0]
        == 0
    )
    line = (
        f"kconfigs --zookeeper {zk_connect} --describe --user al"
        if grammar == "kafka-configs"
        else f"kconfigs describe --zookeeper {zk_connect} --user al"
    )
    assert bash.tab(line) == line.replace("--user al", "--user alice ")
