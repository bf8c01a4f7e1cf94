"""The gateway with a Kafka cluster as its quota source: the upstream it implies, where quota alters
through it go, how it names its store (never a secret), what a reload line counts, and the
quota-limit gauge beside each entity's usage."""

from __future__ import annotations

import os
import socket

import pytest
from prometheus_client import generate_latest

from harness.charging import charging_gateway
from kconfigs.errors import ValidationError
from kconfigs.model import QuotaEntity
from kconfigs.profiles import StoreOptions
from kconfigs_enforcement.gateway.config import config_from_mapping
from kconfigs_enforcement.gateway.health import Readiness, store_description
from kconfigs_enforcement.gateway.metrics import GatewayStats
from kconfigs_enforcement.gateway.quotas import QuotaGate
from kconfigs_enforcement.gateway.reload import QuotaChangeCounts
from kconfigs_enforcement.gateway.runner import quota_admin_mode, source_is_upstream

CLUSTER = StoreOptions(bootstrap_server="b1:9092,b2:9092", origin="--bootstrap-server")


def test_the_cluster_named_as_quota_source_is_the_upstream_when_none_is_given():
    config = config_from_mapping({}).with_upstreams_of(CLUSTER, "SASL_PLAINTEXT").validate()
    assert config.upstreams == (("b1", 9092), ("b2", 9092))
    assert source_is_upstream(config, CLUSTER) and quota_admin_mode(config, CLUSTER) == "auto"


def test_a_given_upstream_wins_over_the_quota_source():
    config = config_from_mapping({"upstreams": "other:9092"}).with_upstreams_of(CLUSTER, "PLAINTEXT").validate()
    assert config.upstreams == (("other", 9092),)
    # alters passed to another cluster would change quotas nobody enforces: answered from the source
    assert not source_is_upstream(config, CLUSTER) and quota_admin_mode(config, CLUSTER) == "gateway"


@pytest.mark.parametrize(
    "store",
    [StoreOptions(zookeeper="zk:2181/kafka"), StoreOptions(store_path="q.db"), StoreOptions()],
    ids=["zookeeper", "embedded", "default"],
)
def test_with_any_other_source_auto_answers_quota_admin_from_the_store(store):
    config = config_from_mapping({"upstreams": "b1:9092"}).with_upstreams_of(store, "PLAINTEXT").validate()
    assert quota_admin_mode(config, store) == "gateway"
    assert quota_admin_mode(config_from_mapping({"upstreams": "b1:9092", "quota_admin": "passthrough"}), store) == (
        "passthrough"
    )


@pytest.mark.parametrize(
    "store, protocol, message",
    [
        (StoreOptions(), "PLAINTEXT", "At least one --upstream host:port is required (or name the cluster with"),
        (StoreOptions(bootstrap_controller="c:9093"), "PLAINTEXT", "--bootstrap-controller names KRaft controllers"),
        (CLUSTER, "SASL_SSL", "--bootstrap-server b1:9092,b2:9092 is reached with SASL_SSL, and the gateway"),
        (CLUSTER, "ssl", "is reached with SSL"),
    ],
)
def test_no_upstream_that_cannot_be_implied_is_refused_in_one_line(store, protocol, message):
    with pytest.raises(ValidationError) as refused:
        config_from_mapping({}).with_upstreams_of(store, protocol).validate()
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_the_store_is_named_by_kind_and_address_without_secrets():
    zookeeper = StoreOptions(zookeeper="zk1:2181/kafka", zk_auth="kconfigs:s3cret", zk_tls_config_file="/etc/tls")
    assert store_description(zookeeper) == "ZooKeeper zk1:2181/kafka (digest auth, TLS)"
    assert store_description(CLUSTER, "sasl_plaintext") == "Kafka cluster b1:9092,b2:9092 (admin API, SASL_PLAINTEXT)"
    assert store_description(StoreOptions(bootstrap_controller="c:9093")) == (
        "KRaft controllers c:9093 (admin API, PLAINTEXT)"
    )
    assert store_description(StoreOptions(store_path="/var/lib/q.db")) == "embedded store /var/lib/q.db"


def test_a_reload_counts_what_changed_not_what_is_in_force():
    a, b, c, d = (QuotaEntity(client_id=n) for n in "abcd")
    before = {a: {"producer_byte_rate": 1.0}, b: {"producer_byte_rate": 2.0}, c: {"consumer_byte_rate": 3.0}}
    after = {a: {"producer_byte_rate": 1.0}, b: {"producer_byte_rate": 5.0}, d: {"request_percentage": 9.0}}
    counts = QuotaChangeCounts.between(before, after)
    assert str(counts) == "3 entities (1 added, 1 changed, 1 removed)"
    assert str(QuotaChangeCounts.between(after, {**after, a: {"producer_byte_rate": 7.0}})) == (
        "1 entity (0 added, 1 changed, 0 removed)"
    )
    assert QuotaChangeCounts.between(after, dict(after)).total == 0


def test_an_active_entitys_limit_is_a_gauge_labelled_as_its_usage():
    quotas = QuotaGate()
    quotas.load(
        [
            ({"user": "alice", "client-id": "app"}, {"producer_byte_rate": 1024.0}),
            ({"client-id": "reader"}, {"consumer_byte_rate": 4096.0, "request_percentage": 25.0}),
        ]
    )
    with charging_gateway(quotas) as gateway:
        gateway.charge("produce", "alice", "app", "10.0.0.1", 100)
        gateway.charge("fetch", "bob", "reader", "10.0.0.2", 100)
        gateway.charge("produce", "carol", "unlimited", "10.0.0.3", 100)  # no quota applies: no limit to show
    text = generate_latest(GatewayStats(quotas.metric_samples, limits=quotas.limit_samples).registry).decode()
    limits = sorted(line for line in text.splitlines() if line.startswith("kconfigs_gateway_quota_limit{"))
    assert limits == [
        'kconfigs_gateway_quota_limit{client_id="app",quota_type="Produce",user="alice"} 1024.0',
        'kconfigs_gateway_quota_limit{client_id="reader",quota_type="Fetch",user=""} 4096.0',
    ]
    assert 'kafka_server_produce_byte_rate{client_id="app",user="alice"}' in text  # the usage beside it
    quotas.load([({"user": "alice", "client-id": "app"}, {"producer_byte_rate": 2048.0})])
    text = generate_latest(GatewayStats(limits=quotas.limit_samples).registry).decode()
    assert 'kconfigs_gateway_quota_limit{client_id="app",quota_type="Produce",user="alice"} 2048.0' in text


def test_readiness_needs_the_quotas_loaded_and_an_upstream_accepting_connections():
    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refused
        up, down = listening.getsockname(), closed.getsockname()
        loaded = [False]
        ready = Readiness([up], lambda: loaded[0], "Kafka cluster b:1 (admin API, PLAINTEXT)")
        assert ready.not_ready() == "quotas not loaded yet from Kafka cluster b:1 (admin API, PLAINTEXT)"
        loaded[0] = True
        assert ready.not_ready() is None
        assert Readiness([down, up], lambda: True, "s").not_ready() is None  # one upstream is enough
        assert Readiness([down], lambda: True, "s").not_ready() == (
            f"upstream 127.0.0.1:{down[1]} not reachable (Connection refused)"
        )


@pytest.mark.parametrize("named_by", ["--profile", "KCONFIGS_PROFILE", "KCONFIGS_BOOTSTRAP_SERVER"])
def test_serve_resolves_its_store_as_every_command_does(tmp_path, monkeypatch, named_by):
    from kconfigs.profiles import store_option_fields as fields
    from kconfigs_enforcement.gateway.runner import resolve_gateway_store

    config_file = tmp_path / "config.toml"
    config_file.write_text('[profiles.prod]\nbootstrap_server = "k1:9092,k2:9092"\n')
    for name in [n for n in os.environ if n.startswith("KCONFIGS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KCONFIGS_CONFIG", str(config_file))
    profile = None
    if named_by == "--profile":
        profile = "prod"
    elif named_by == "KCONFIGS_PROFILE":
        monkeypatch.setenv("KCONFIGS_PROFILE", "prod")
    else:
        monkeypatch.setenv("KCONFIGS_BOOTSTRAP_SERVER", "k1:9092,k2:9092")
    flags = dict.fromkeys(fields())
    config, store = resolve_gateway_store(config_from_mapping({}), flags, profile)
    assert store.bootstrap_server == "k1:9092,k2:9092"
    assert config.upstreams == (("k1", 9092), ("k2", 9092)) and quota_admin_mode(config, store) == "auto"
