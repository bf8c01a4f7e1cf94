"""The control-plane side of the native data plane: one line when the extension is missing, the
version ceilings handed to Rust, and one exact quota state under charges from many threads."""

import threading

import pytest

from kconfigs.errors import ValidationError
from kconfigs_enforcement.gateway import native_ext, native_plane
from kconfigs_enforcement.gateway.config import GatewayConfig
from kconfigs_enforcement.gateway.quotas import QuotaGate


def test_without_the_extension_serve_says_so_in_one_line(monkeypatch):
    monkeypatch.setattr(native_ext, "UNAVAILABLE", "the native extension was not built: reinstall kconfigs with cargo")
    with pytest.raises(ValidationError) as err:
        GatewayConfig(upstreams=(("b", 1),), data_plane="native").validate()
    assert "\n" not in str(err.value) and "cargo" in str(err.value)
    GatewayConfig(upstreams=(("b", 1),), data_plane="asyncio").validate()  # the rest still works


def test_unknown_data_plane_is_refused():
    with pytest.raises(ValidationError, match="data_plane must be asyncio or native"):
        GatewayConfig(upstreams=(("b", 1),), data_plane="turbo").validate()


def test_ceilings_remove_share_apis_and_cap_describe_quorum():
    ceilings = native_plane.version_ceilings()
    assert ceilings[78] == -1 and ceilings[79] == -1  # ShareFetch / ShareAcknowledge: NodeEndpoints not rewritten
    assert ceilings[55] == 1
    assert ceilings[0] >= 12  # Produce v12+: KIP-890 transactions
    assert 19 not in ceilings  # CreateTopics is passed through at the broker's versions


def test_throttle_first_versions_match_the_schemas():
    pairs = set(native_plane.throttle_first_versions())
    assert (3, 3) in pairs and (3, 2) not in pairs  # Metadata: from v3
    assert (1, 1) in pairs and (1, 0) not in pairs  # Fetch: from v1
    assert not any(key == 0 for key, _v in pairs)  # Produce keeps it after its responses


def _produce_rate(threads: int, per_thread: int, size: int) -> float:
    gate = QuotaGate(window_num=11, clock_ms=lambda: 1_000)
    gate.load([({"client-id": "app"}, {"producer_byte_rate": 1e12})])

    def charge():
        for _ in range(per_thread):
            gate.on_produce("ANONYMOUS", "app", "127.0.0.1", size)

    workers = [threading.Thread(target=charge) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    rates = [s.value for s in gate.metric_samples() if s.group == "Produce" and s.name == "byte-rate"]
    assert len(rates) == 1
    return rates[0]


def test_one_entity_charged_from_many_threads_is_charged_exactly():
    """The native data plane charges from its worker threads: one entity's connections on
    different threads must add up to exactly what one thread charging it all would."""
    assert _produce_rate(8, 2_000, 1000) == _produce_rate(1, 16_000, 1000)
