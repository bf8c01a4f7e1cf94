"""Metric-name parsing: JmxTool headers and ObjectNames, jmx_exporter naming schemes (spec §C, §8)."""

from kconfigs_analysis import metric_names as names
from kconfigs_analysis.metric_names import MetricKey


def test_jmxtool_header_splits_on_quote_comma_quote_even_with_quoted_object_name_values():
    header = '"time","kafka.server:type=Produce,user=bob,client-id="etl,nightly":byte-rate","kafka.server:type=Fetch,client-id=c:throttle-time"'
    assert names.split_jmxtool_header(header) == [
        "time",
        'kafka.server:type=Produce,user=bob,client-id="etl,nightly":byte-rate',
        "kafka.server:type=Fetch,client-id=c:throttle-time",
    ]


def test_a_data_row_or_jmx_chatter_is_not_a_header():
    assert names.split_jmxtool_header("1714557600000,1.0,NaN") is None
    assert (
        names.split_jmxtool_header("Trying to connect to JMX url: service:jmx:rmi:///jndi/rmi://:9999/jmxrmi.") is None
    )


def test_user_tag_is_url_decoded_and_quoted_client_id_is_unquoted():
    key = names.parse_jmxtool_key(
        'kafka.server:type=Request,user=CN%3Dalice%2COU%3Deng,client-id="a\\"b,c":request-time'
    )
    assert key == MetricKey("request", "rate", "CN=alice,OU=eng", 'a"b,c', None)


def test_tag_shapes_follow_the_quota_levels_in_force():
    assert names.parse_jmxtool_key("kafka.server:type=Produce,client-id=app:byte-rate") == MetricKey(
        "produce", "rate", None, "app"
    )
    assert names.parse_jmxtool_key("kafka.server:type=Fetch,user=u:throttle-time") == MetricKey(
        "fetch", "throttle_ms", "u", None
    )
    assert (
        names.parse_jmxtool_key("kafka.server:type=ControllerMutation,user=u,client-id=c:mutation-rate").kind
        == "controller_mutation"
    )


def test_columns_that_are_not_per_entity_quota_metrics_are_ignored():
    assert names.parse_jmxtool_key("kafka.server:type=Produce:queue-size") is None
    assert names.parse_jmxtool_key("kafka.server:type=Request:exempt-request-time") is None
    assert names.parse_jmxtool_key("kafka.server:type=ControllerMutation,user=u,client-id=c:tokens") is None
    assert (
        names.parse_jmxtool_key("kafka.server:type=socket-server-metrics,listener=PLAINTEXT:connection-accept-rate")
        is None
    )


def test_ip_connection_accept_rate_is_a_connection_entity():
    key = names.parse_jmxtool_key("kafka.server:type=socket-server-metrics,ip=10.0.0.7:connection-accept-rate")
    assert key == MetricKey("connection", "rate", ip="10.0.0.7")


def test_confluent_lowercase_naming():
    key = names.parse_prometheus_sample("kafka_server_produce_byte_rate", {"user": "CN%3Da", "client_id": "app-1"})
    assert key == MetricKey("produce", "rate", "CN=a", "app-1")
    assert names.parse_prometheus_sample("kafka_server_request_request_time", {"client_id": "c"}).kind == "request"


def test_jmx_exporter_example_resource_label_and_its_greedy_regex_quirk():
    labels = {"resource": "Produce, user=carol", "clientId": "app-9"}
    assert names.parse_prometheus_sample("kafka_server_quota_byte_rate", labels) == MetricKey(
        "produce", "rate", "carol", "app-9"
    )
    labels = {"resource": "Fetch", "user": "carol", "clientId": "app-9"}
    assert names.parse_prometheus_sample("kafka_server_quota_throttle_time", labels) == MetricKey(
        "fetch", "throttle_ms", "carol", "app-9"
    )


def test_default_naming_keeps_the_group_case():
    assert names.parse_prometheus_sample("kafka_server_Produce_byte_rate", {"user": "d"}).kind == "produce"
    assert (
        names.parse_prometheus_sample("kafka_server_ControllerMutation_mutation_rate", {"client_id": "c"}).kind
        == "controller_mutation"
    )


def test_other_metrics_are_not_quota_metrics():
    assert names.parse_prometheus_sample("jvm_memory_bytes_used", {"area": "heap"}) is None
    assert names.parse_prometheus_sample("kafka_server_produce_byte_rate", {}) is None  # no entity tag
