"""Write one benchmark's section of benchmarks/RESULTS.md (between <!-- name --> markers),
leaving the other sections alone."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = "# Benchmark results\n\nEach section is written by the script it names, with the command that produced it.\n"


def write_section(name: str, body: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else HEADER
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(text)
