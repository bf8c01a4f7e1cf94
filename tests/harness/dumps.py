"""Synthetic metric dumps for the analyze tests (``kconfigs analyze generate``'s own generator,
called in-process)."""

from __future__ import annotations

from pathlib import Path


def generated_dump(out: Path, samples: int, entities: int) -> Path:
    """A JmxTool dump of ``samples`` samples over ``entities`` entities in ``out`` (with its
    ``truth.json``)."""
    from kconfigs_analysis.generate import GeneratorSpec, generate

    generate(GeneratorSpec(samples=samples, out_dir=str(out), entities=entities))
    return out
