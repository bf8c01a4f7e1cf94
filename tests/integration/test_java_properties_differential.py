"""kconfigs' properties reader against Kafka's own (``Utils.loadProps``, i.e. java.util.Properties
on the suite's JDK) over generated files: continuations meeting comments, blank lines and the end
of the file, escapes, separators and line ends of every kind. kafka-configs reads
``--add-config-file`` and ``--command-config`` this way, so any difference is a file that the two
tools read differently."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from compat_support import jvm_examples
from hypothesis import given
from hypothesis import strategies as st

from harness.javac import java_program_command
from harness.versions import KAFKA_ZK_TOOL_VERSION
from kconfigs.errors import ValidationError
from kconfigs.java_properties import read_properties

pytestmark = pytest.mark.integration
LOAD_PROPS = Path(__file__).resolve().parent / "java" / "LoadProps.java"

#: a natural line: leading blanks, perhaps a comment mark, a body of the characters the format
#: gives a meaning to (and a few plain ones), then perhaps backslashes that may continue it
BLANKS = st.lists(st.sampled_from([" ", "\t", "\f"]), max_size=2).map("".join)
BODY = st.lists(
    st.sampled_from([" ", "#", "!", "\\", "\\\\", "=", ":", "k", "v", "\\u0041", "\\u00", "\\n", "\\ ", "\xe9"]),
    max_size=4,
).map("".join)
LINE = st.tuples(BLANKS, st.sampled_from(["", "", "#", "!"]), BODY, st.sampled_from(["", "", "\\", "\\\\"])).map(
    "".join
)
ENDS = st.sampled_from(["\n", "\r", "\r\n"])
FILES = st.tuples(st.lists(st.tuples(LINE, ENDS), min_size=1, max_size=5), st.sampled_from(["", "\n", "\r", "\r\n"]))


@pytest.fixture(scope="module")
def java_reader():
    """Kafka's reader, one JVM for the module: a path in, its JSON answer out."""
    process = subprocess.Popen(
        java_program_command(LOAD_PROPS, KAFKA_ZK_TOOL_VERSION, []),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )

    def read(path: Path) -> dict:
        process.stdin.write(f"{path}\n")
        process.stdin.flush()
        return json.loads(process.stdout.readline())

    yield read
    process.stdin.close()
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("properties")


def ours(path: Path) -> dict:
    try:
        return {"ok": read_properties(str(path))}
    except ValidationError:
        return {"error": "malformed"}


@jvm_examples(400)
@given(file=FILES)
def test_a_generated_properties_file_reads_as_kafka_reads_it(java_reader, work, file):
    lines, last_end = file
    text = "".join(line + end for line, end in lines[:-1]) + lines[-1][0] + last_end
    path = work / "generated.properties"
    path.write_bytes(text.encode("latin-1"))
    theirs = java_reader(path)
    if "error" in theirs:  # a malformed \u escape: Java's message is its own, the refusal is the point
        theirs = {"error": "malformed"}
    assert ours(path) == theirs, repr(text)
