"""KIP-219's combination of a bandwidth and the request throttle: the same vectors (Kafka's rule in
KafkaApis) are checked by the data plane's Rust test of its own ``combined_throttle``."""

import csv
from pathlib import Path

import kconfigs_enforcement
from kconfigs_enforcement.throttle import CombinedThrottle, combined_throttle

VECTORS = Path(kconfigs_enforcement.__path__[0]) / "kip219_vectors.csv"


def _vectors() -> list[dict]:
    lines = [line for line in VECTORS.read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


def test_the_combination_gives_kafkas_answers():
    vectors = _vectors()
    assert len(vectors) >= 6
    for v in vectors:
        expected = CombinedThrottle(int(v["throttle_ms"]), v["recorded_by"] or None)
        assert combined_throttle(int(v["bandwidth_ms"]), int(v["request_ms"])) == expected, v
