"""Helpers for the kconfigs compat-mode integration tests: run ``kconfigs`` and real
kafka-configs 2.8.2 as processes, and read back what they left in ZooKeeper."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from hypothesis import HealthCheck, settings

from harness.java import run_config_command, run_kafka_class
from harness.versions import KAFKA_ZK_TOOL_VERSION

#: ``KCONFIGS_EXAMPLES_SCALE=N`` runs N times the examples of the tests that compare with the real
#: kafka-configs, drawn at random: a deeper search than the suite's fixed, repeatable one
EXAMPLES_SCALE = int(os.environ.get("KCONFIGS_EXAMPLES_SCALE") or 1)


def jvm_examples(count: int) -> settings:
    """Hypothesis settings for examples that each start a JVM tool: ``count`` of them (times
    EXAMPLES_SCALE), no deadline, the same ones every run unless scaled."""
    return settings(
        max_examples=count * EXAMPLES_SCALE,
        deadline=None,
        derandomize=EXAMPLES_SCALE == 1,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


CONFIG_COMMAND = "kafka.admin.ConfigCommand"
ZK_DEPRECATION_LINES = (
    "Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.",
    "Use --bootstrap-server instead to specify a broker to connect to.",
)


@dataclass(frozen=True)
class ToolRun:
    """One command's observable result: exit code, stdout lines, and its one-line error."""

    rc: int
    stdout: list[str]
    error: str  # "" on success
    stderr: str


def run_kconfigs(args: list[str], env: dict[str, str] | None = None, timeout_s: float = 60) -> ToolRun:
    """``kconfigs <args>`` as a separate process (as scripts run it)."""
    proc = subprocess.run(
        [sys.executable, "-m", "kconfigs", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )
    first = proc.stderr.splitlines()[0] if proc.stderr.strip() else ""
    return ToolRun(proc.returncode, proc.stdout.splitlines(), first, proc.stderr)


def run_kafka_configs(args: list[str]) -> ToolRun:
    """Real kafka-configs 2.8.2 (``kafka.admin.ConfigCommand``); its two ZooKeeper deprecation
    lines are dropped from stdout, and a stack-trace error is reduced to its exception message."""
    proc = run_kafka_class(KAFKA_ZK_TOOL_VERSION, CONFIG_COMMAND, args)
    lines = [line for line in proc.stdout.splitlines() if line not in ZK_DEPRECATION_LINES]
    return ToolRun(proc.returncode, lines, kafka_error_message(proc.stderr), proc.stderr)


def run_kafka_configs_batch(version: str, args: list[str]) -> ToolRun:
    """Real kafka-configs ``version`` in the session's one JVM for that version (ToolBatch):
    same normalisation as ``run_kafka_configs``; a broker's refusal is reduced to its message."""
    proc = run_config_command(version, args)
    lines = [line for line in proc.stdout.splitlines() if line not in ZK_DEPRECATION_LINES]
    return ToolRun(proc.returncode, lines, broker_refusal_message(kafka_error_message(proc.stderr)), proc.stderr)


_WRAPPED = re.compile(r"^(?:[a-z]+\.)+[A-Za-z]+(?:Exception|Error): (.*)$")


def broker_refusal_message(message: str) -> str:
    """``org.apache.kafka.common.errors.InvalidRequestException: Ignoring ...`` (an
    ExecutionException's message) -> ``Ignoring ...``: kconfigs prints the broker's text alone."""
    match = _WRAPPED.match(message)
    return match.group(1) if match else message


def run_kconfigs_in_process(args: list[str]) -> ToolRun:
    """``kconfigs <args>`` through its real entry point, in this process (no interpreter start
    per command; the hypothesis-driven differential tests run hundreds)."""
    from harness.cli import run_main

    rc, stdout, stderr = run_main(*args)
    first = stderr.splitlines()[0] if stderr.strip() else ""
    return ToolRun(rc, stdout.splitlines(), first, stderr)


def kafka_error_message(stderr: str) -> str:
    """The message kafka-configs reports: the first stderr line for IllegalArgumentException-type
    errors, else the exception message under ``Error while executing config command ...``."""
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith(("SLF4J", "log4j"))]
    if not lines:
        return ""
    if lines[0].startswith("Error while executing config command") and len(lines) > 1:
        exception_line = lines[1]
        _, sep, message = exception_line.partition(": ")
        return message if sep else exception_line
    return lines[0]


def config_tree(client, root: str = "/config") -> dict[str, object]:
    """Every znode under ``root`` except the change notifications: path -> parsed JSON, or
    None for null/empty data (Kafka's parents)."""
    tree: dict[str, object] = {}

    def walk(path: str) -> None:
        data, _ = client.get(path)
        if path != root:
            tree[path] = json.loads(data) if data else None
        for child in sorted(client.get_children(path)):
            if f"{path}/{child}" != f"{root}/changes":
                walk(f"{path}/{child}")

    if client.exists(root):
        walk(root)
    return tree


def notifications(client) -> list[dict]:
    """The ``/config/changes`` notifications, parsed, in sequence order."""
    if not client.exists("/config/changes"):
        return []
    names = sorted(client.get_children("/config/changes"))
    return [json.loads(client.get(f"/config/changes/{n}")[0]) for n in names]


def without_empty_leaves(tree: dict[str, object]) -> dict[str, object]:
    """What Kafka 3.5+ leaves where 2.8 keeps ``{"version":1,"config":{}}``: emptied quota nodes
    without children are gone, and so are parents that only held them."""
    tree = dict(tree)
    roots = {"/config/users", "/config/clients", "/config/ips"}
    while True:

        def empty(doc):
            return doc is None or doc.get("config") == {}

        leaves = [
            p
            for p, doc in tree.items()
            if p not in roots and empty(doc) and not any(q.startswith(p + "/") for q in tree)
        ]
        if not leaves:
            return tree
        for path in leaves:
            del tree[path]


_PAIR_BOUNDARY = re.compile(
    r",(?=(?:producer_byte_rate|consumer_byte_rate|request_percentage|"
    r"controller_mutation_rate|connection_creation_rate|producer_ids_rate|"
    r"SCRAM-SHA-256|SCRAM-SHA-512)=)"
)


def normalised_lines(lines: list[str]) -> list[str]:
    """Describe output with key order inside each line and line order made canonical (both
    come from Java hash maps / ZooKeeper child order in kafka-configs). Values may hold commas
    (SCRAM credentials), so pairs are split only before a known key."""
    out = []
    for line in lines:
        head, sep, pairs = line.partition(" are ")
        if sep and pairs:
            line = head + sep + ",".join(sorted(_PAIR_BOUNDARY.split(pairs)))
        out.append(line)
    return sorted(out)


def option_groups(args: list[str]) -> list[list[str]]:
    """``["--alter", "--user", "u", ...]`` -> ``[["--alter"], ["--user", "u"], ...]``."""
    groups: list[list[str]] = []
    for arg in args:
        if arg.startswith("-") or not groups:
            groups.append([arg])
        else:
            groups[-1].append(arg)
    return groups


def arranged(args: list[str], order: list[int], forms: list[str]) -> list[str]:
    """The same kafka-configs command line with its options in another order (``order`` is a
    permutation key) and each option spelt ``--opt v``, ``--opt=v`` or ``-opt v`` (``forms``,
    cycled): joptsimple reads them all alike. ``--entity-type``/``--entity-name`` keep their
    relative order (kafka-configs pairs them by position)."""
    groups = option_groups(args)
    keyed = sorted(range(len(groups)), key=lambda i: (order[i % len(order)], i))
    paired = [i for i in keyed if groups[i][0] in ("--entity-type", "--entity-name", "--entity-default")]
    positional = iter(sorted(paired))
    out = []
    for n, i in enumerate(keyed):
        group = groups[next(positional)] if i in paired else groups[i]
        form = forms[n % len(forms)]
        name, *value = group
        if form == "=" and value:
            out.append(f"{name}={value[0]}")
        else:
            out += [("-" + name.lstrip("-")) if form == "-" else name, *value]
    return out
