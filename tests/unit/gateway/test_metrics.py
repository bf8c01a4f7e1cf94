"""Kafka metric names mapped to Prometheus conventions (jmx_exporter default format, lowercase)."""

from prometheus_client import generate_latest

from kconfigs_enforcement import MetricSample
from kconfigs_enforcement.gateway.metrics import GatewayStats, prometheus_name


def test_names_follow_jmx_exporter_lowercase_default():
    assert prometheus_name("Produce", "byte-rate") == "kafka_server_produce_byte_rate"
    assert prometheus_name("Request", "request-time") == "kafka_server_request_request_time"
    assert (
        prometheus_name("socket-server-metrics", "connection-accept-rate")
        == "kafka_server_socket_server_metrics_connection_accept_rate"
    )


def test_enforcer_samples_are_exported_with_kafka_tags_and_a_uniform_label_set():
    samples = [
        MetricSample("byte-rate", "Produce", {"user": "alice", "client-id": "app"}, 512.0),
        MetricSample("connection-accept-rate", "socket-server-metrics", {"ip": "10.0.0.7"}, 3.0),
        MetricSample("connection-accept-rate", "socket-server-metrics", {"listener": "bootstrap"}, 4.0),
    ]
    text = generate_latest(GatewayStats(lambda: samples).registry).decode()
    assert 'kafka_server_produce_byte_rate{client_id="app",user="alice"} 512.0' in text
    assert 'kafka_server_socket_server_metrics_connection_accept_rate{ip="10.0.0.7",listener=""} 3.0' in text
    assert 'kafka_server_socket_server_metrics_connection_accept_rate{ip="",listener="bootstrap"} 4.0' in text


def test_gateway_counters():
    stats = GatewayStats()
    stats.connection_opened("bootstrap")
    stats.bad_frame("client")
    assert stats.registry.get_sample_value("kconfigs_gateway_open_connections", {"listener": "bootstrap"}) == 1
    assert stats.registry.get_sample_value("kconfigs_gateway_bad_frames_total", {"side": "client"}) == 1
    stats.usage_lines_lost(3)
    assert stats.registry.get_sample_value("kconfigs_gateway_usage_log_lost_lines_total") == 3


def test_streamed_frames_are_read_from_the_data_plane_on_each_scrape():
    counts = {"produce_requests": 2, "fetch_responses": 5, "share_fetch_responses": 3, "spliced_bytes": 1_048_576}
    stats = GatewayStats(streamed=lambda: counts)
    value = stats.registry.get_sample_value
    assert value("kconfigs_gateway_streamed_frames_total", {"frame": "produce_request"}) == 2
    assert value("kconfigs_gateway_streamed_frames_total", {"frame": "fetch_response"}) == 5
    assert value("kconfigs_gateway_streamed_frames_total", {"frame": "share_fetch_response"}) == 3
    assert value("kconfigs_gateway_spliced_bytes_total") == 1_048_576
    counts["fetch_responses"] = 6  # no copy is kept: the next scrape reads the plane again
    assert value("kconfigs_gateway_streamed_frames_total", {"frame": "fetch_response"}) == 6
    assert GatewayStats().registry.get_sample_value("kconfigs_gateway_spliced_bytes_total") is None
