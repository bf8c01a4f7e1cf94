"""QuotaGate.may_throttle decides which requests the gateway handles one at a time (as a broker
does) so that a throttle applies from the very next request."""

from kconfigs_enforcement.gateway.quotas import QuotaGate


def _gate(records):
    gate = QuotaGate(window_num=2)
    gate.load(records)
    return gate


def test_no_quotas_means_nothing_is_quota_bound():
    assert not QuotaGate().may_throttle("alice", "app", ("produce", "request"))


def test_a_produce_quota_binds_produce_only_for_the_clients_it_resolves_to():
    gate = _gate([({"client-id": "app"}, {"producer_byte_rate": 1000.0})])
    assert gate.may_throttle("ANONYMOUS", "app", ("produce", "request"))
    assert not gate.may_throttle("ANONYMOUS", "app", ("fetch", "request"))
    assert not gate.may_throttle("ANONYMOUS", "other", ("produce", "request"))


def test_a_default_request_quota_binds_every_non_exempt_request():
    gate = _gate([({"user": None}, {"request_percentage": 50.0})])
    assert gate.may_throttle("bob", "x", ("request",))
    assert not gate.may_throttle("bob", "x", ())  # ApiVersions / SASL: exempt
