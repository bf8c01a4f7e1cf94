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


def machine() -> str:
    """``x86_64 (AMD EPYC), 2 cores``: what a result was measured on. The CPU model is named
    because sessions land on machines of different speeds; only figures from the same run (a
    peer measured beside) compare across them."""
    import os
    import platform

    model = "CPU model unknown"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{platform.machine()} ({model}), {os.cpu_count()} cores"
