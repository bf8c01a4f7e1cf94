"""Kafka's own kafka-configs (ConfigCommand from the 3.9 and 4.x jars) against the gateway's quota
admin API, with tansu upstream (which lacks DescribeClientQuotas/AlterClientQuotas, so the gateway
answers them from its store).

Differential: two gateways, each with its own embedded store, in front of the same tansu. The same
command sequence runs through Kafka's ConfigCommand against one and ``kconfigs --bootstrap-server``
against the other: same exit codes, same output lines in the same order, same
error line, and the same store content at the end; the store is what the gateway enforces.
"""

from __future__ import annotations

import pytest

from harness.java import run_config_command
from harness.versions import KAFKA_3_VERSION, KAFKA_4_VERSION
from kconfigs.model import DEFAULT, QuotaEntity
from tests.integration.compat_support import kafka_error_message, run_kconfigs
from tests.integration.gateway_support import ServedGateway, TansuProcess

pytestmark = pytest.mark.integration

ALICE_APP = ["--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app"]
COMMANDS = [
    ["--alter", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048", *ALICE_APP],
    ["--alter", "--add-config", "request_percentage=50", "--entity-type", "clients", "--entity-default"],
    ["--alter", "--add-config", "producer_byte_rate=10485760", "--entity-type", "users", "--entity-name", "bob"],
    [
        "--alter",
        "--add-config",
        "consumer_byte_rate=4096",
        "--entity-type",
        "users",
        "--entity-default",
        "--entity-type",
        "clients",
        "--entity-name",
        "batch",
    ],
    ["--alter", "--add-config", "connection_creation_rate=5", "--entity-type", "ips", "--entity-name", "127.0.0.1"],
    ["--alter", "--delete-config", "consumer_byte_rate", *ALICE_APP],
    ["--alter", "--delete-config", "consumer_byte_rate", "--entity-type", "users", "--entity-name", "bob"],  # not set
    ["--alter", "--add-config", "producer_byte_rate=-1", "--entity-type", "clients", "--entity-name", "bad"],
    ["--describe", *ALICE_APP],
    ["--describe", "--entity-type", "clients", "--entity-default"],
    ["--describe", "--entity-type", "clients"],
    ["--describe", "--entity-type", "users", "--entity-type", "clients"],
    ["--describe", "--entity-type", "ips"],
]
EXPECTED_STORE = {
    QuotaEntity(user="alice", client_id="app"): {"producer_byte_rate": "1024"},
    QuotaEntity(client_id=DEFAULT): {"request_percentage": "50.0"},
    QuotaEntity(user="bob"): {"producer_byte_rate": "10485760"},
    QuotaEntity(user=DEFAULT, client_id="batch"): {"consumer_byte_rate": "4096"},
    QuotaEntity(ip="127.0.0.1"): {"connection_creation_rate": "5"},
}


@pytest.fixture(scope="module")
def tansu_upstream(tmp_path_factory):
    tansu = TansuProcess(tmp_path_factory.mktemp("tansu"))
    yield tansu.bootstrap
    tansu.stop()


@pytest.mark.parametrize("version", [KAFKA_3_VERSION, KAFKA_4_VERSION])
def test_kafka_configs_manages_the_gateway_quotas_like_kconfigs(tansu_upstream, tmp_path, version):
    kafka_side, kconfigs_side = (
        ServedGateway(tansu_upstream, tmp_path / "a"),
        ServedGateway(tansu_upstream, tmp_path / "b"),
    )
    try:
        for command in COMMANDS:
            theirs = run_config_command(version, ["--bootstrap-server", kafka_side.bootstrap, *command])
            ours = run_kconfigs(["--bootstrap-server", kconfigs_side.bootstrap, *command])
            what = f"kafka-configs {version} {' '.join(command)}"
            assert (theirs.returncode == 0) == (ours.rc == 0), (what, theirs.stderr[-2000:], ours.stderr)
            assert theirs.stdout.strip().splitlines() == ours.stdout, what  # lines and keys in the same order
            if theirs.returncode != 0:  # kafka-configs may prefix the exception class
                assert ours.error and ours.error in kafka_error_message(theirs.stderr), (
                    what,
                    theirs.stderr[-2000:],
                    ours.error,
                )
        assert kafka_side.snapshot() == kconfigs_side.snapshot() == EXPECTED_STORE
        # users alone: kafka-configs prints the quotas (answered by the gateway), then asks the
        # upstream for SCRAM credentials (DescribeUserScramCredentials, passed through); tansu
        # answers with a null `results` array, which Kafka's admin client rejects (exit 1). That
        # step is tansu's, not the gateway's (docs/gateway.md, limits).
        users = run_config_command(
            version, ["--bootstrap-server", kafka_side.bootstrap, "--describe", "--entity-type", "users"]
        )
        assert "Quota configs for user-principal 'bob' are producer_byte_rate=1.048576E7" in users.stdout.splitlines()
    finally:
        kafka_side.stop()
        kconfigs_side.stop()
