"""Quota kinds as the Spark analysis uses them: views of ``kconfigs.keys``' table (pure, no Spark)."""

from __future__ import annotations

from kconfigs.keys import QUOTA_KINDS

#: quota kind -> Kafka quota key
KIND_QUOTA_KEY: dict[str, str] = {kind: spec.name for kind, spec in QUOTA_KINDS.items()}
#: quota kind -> unit of its measured rate
KIND_RATE_UNIT: dict[str, str] = {kind: spec.unit for kind, spec in QUOTA_KINDS.items()}
