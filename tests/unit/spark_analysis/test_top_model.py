"""``kconfigs top``'s pure parts: series from every jmx_exporter naming, the effective quota and
level of a sensor's tags, sums over sources, sorting, filtering, thresholds, the key map."""

from __future__ import annotations

import pytest

from kconfigs_analysis.top_model import Reading, SeriesKey, above, build_rows, matching, sorted_rows
from kconfigs_analysis.top_sources import metrics_url, parse_exposition
from kconfigs_analysis.top_terminal import apply_key
from kconfigs_analysis.top_view import Screen, SourceState, format_amount, plain_table, snapshot_document
from kconfigs_enforcement.resolution import QuotaSnapshot

QUOTAS = [
    ({"user": None}, {"producer_byte_rate": 1_000_000.0}),  # level 6 for every user
    ({"user": "alice"}, {"producer_byte_rate": 2_000_000.0, "consumer_byte_rate": 500_000.0}),
    ({"user": "alice", "client-id": "etl"}, {"request_percentage": 50.0}),
    ({"client-id": None}, {"consumer_byte_rate": 9_000_000.0}),
    ({"ip": "10.0.0.1"}, {"connection_creation_rate": 5.0}),
]


@pytest.fixture
def snapshot():
    return QuotaSnapshot.from_records(QUOTAS)


def test_every_jmx_exporter_naming_becomes_the_same_series():
    # jmx_exporter's example rules (resource label, clientId), default naming, and a gateway's page
    page = "\n".join(
        [
            'kafka_server_quota_byte_rate{resource="Produce",user="alice",clientId="etl",} 1500.0',
            'kafka_server_quota_throttle_time{resource="Produce",user="alice",clientId="etl",} 12.5',
            'kafka_server_Fetch_byte_rate{user="CN%3Dbob",client_id="\\"etl:nightly\\"",} 300.0',
            'kafka_server_socket_server_metrics_connection_accept_rate{listener="PLAINTEXT",ip="10.0.0.1",} 2.0',
            'kafka_server_request_request_time{user="alice",client_id="etl"} NaN',
            'jvm_memory_bytes_used{area="heap",} 1.0E8',
        ]
    )
    readings = parse_exposition(page)
    assert readings[SeriesKey("produce", "alice", "etl")] == Reading(1500.0, 12.5)
    assert readings[SeriesKey("fetch", "CN=bob", "etl:nightly")] == Reading(300.0, None)
    assert readings[SeriesKey("connection", ip="10.0.0.1")] == Reading(2.0, None)
    assert readings[SeriesKey("request", "alice", "etl")].rate == 0.0  # NaN: nothing measured
    assert len(readings) == 4


def test_series_known_from_an_earlier_page_take_this_pages_values_and_timestamps_are_not_values():
    known: dict = {}
    line = 'kafka_server_quota_byte_rate{resource="Produce",user="alice",clientId="etl",} %s'
    key = SeriesKey("produce", "alice", "etl")
    assert parse_exposition(line % "10.0", known)[key].rate == 10.0
    assert parse_exposition(line % "25.0", known)[key].rate == 25.0  # looked up, not parsed again
    assert len(known) == 1
    stamped = 'kafka_server_produce_byte_rate{user="bob",client_id="x"} 7.5 1733000000000'
    for _ in range(2):
        assert parse_exposition(stamped, known)[SeriesKey("produce", "bob", "x")].rate == 7.5
    assert len(known) == 1


def test_a_page_that_is_not_prometheus_text_is_one_line():
    from kconfigs_analysis.top_sources import SourceUnreachable

    with pytest.raises(SourceUnreachable, match="not a Prometheus metrics page"):
        parse_exposition("<html><body>login</body></html>\n{")


def test_the_quota_of_a_sensor_is_the_brokers_quota_limit_for_its_tags(snapshot):
    rows = build_rows(
        {
            "b1": {
                SeriesKey("produce", "alice", ""): Reading(1_500_000.0),  # user-level sensor: level 3
                SeriesKey("produce", "carol", ""): Reading(10.0),  # <default> user: level 6
                SeriesKey("request", "alice", "etl"): Reading(25.0),  # (user, client): level 1
                SeriesKey("fetch", "", "app"): Reading(1.0),  # client <default>: level 8
                SeriesKey("connection", ip="10.0.0.1"): Reading(1.0),
                SeriesKey("controller_mutation", "", "x"): Reading(3.0),  # no quota anywhere
            }
        },
        snapshot,
    )
    got = {(r.key.kind, r.key.user or r.key.client_id or r.key.ip): (r.quota.value, r.quota.level) for r in rows}
    assert got == {
        ("produce", "alice"): (2_000_000.0, 3),
        ("produce", "carol"): (1_000_000.0, 6),
        ("request", "alice"): (50.0, 1),
        ("fetch", "app"): (9_000_000.0, 8),
        ("connection", "10.0.0.1"): (5.0, 1),
        ("controller_mutation", "x"): (None, 0),
    }
    alice = next(r for r in rows if r.key == SeriesKey("produce", "alice", ""))
    assert alice.quota.path == "/config/users/alice" and alice.percent == pytest.approx(75.0)
    unlimited = next(r for r in rows if r.key.kind == "controller_mutation")
    assert unlimited.percent is None and above(rows, 0) == [r for r in rows if r.percent and r.percent > 0]


def test_rates_add_up_over_brokers_and_the_throttle_is_the_largest(snapshot):
    key = SeriesKey("produce", "alice", "")
    (row,) = build_rows(
        {"b1": {key: Reading(600_000.0, 30.0)}, "b2": {key: Reading(900_000.0, float("nan"))}, "b3": {}}, snapshot
    )
    assert row.rate == 1_500_000.0 and row.throttle_ms == 30.0 and row.throttled
    assert set(row.per_source) == {"b1", "b2"}


def test_trend_follows_the_previous_refresh(snapshot):
    keys = [SeriesKey("produce", u, "") for u in ("a", "b", "c", "d")]
    readings = {"b1": {k: Reading(r) for k, r in zip(keys, (100.0, 100.0, 100.0, 100.0))}}
    previous = {keys[0]: 50.0, keys[1]: 200.0, keys[2]: 98.0}
    trends = {r.key.user: r.trend for r in build_rows(readings, snapshot, previous)}
    assert trends == {"a": "up", "b": "down", "c": "steady", "d": "new"}


def _rows(snapshot):
    return build_rows(
        {
            "b1": {
                SeriesKey("produce", "alice", ""): Reading(1_900_000.0, 5.0),  # 95 %
                SeriesKey("produce", "bob", ""): Reading(100_000.0),  # 10 %
                SeriesKey("controller_mutation", "", "zed"): Reading(4.0),  # no quota
                SeriesKey("fetch", "", "idle"): Reading(0.0),
            }
        },
        snapshot,
    )


def test_sorting_filtering_and_thresholds(snapshot):
    rows = _rows(snapshot)
    assert [r.key.user or r.key.client_id for r in sorted_rows(rows)] == [
        "alice",
        "bob",
        "idle",
        "zed",
    ]  # no quota last
    assert [r.key.user or r.key.client_id for r in sorted_rows(rows, "user")] == ["idle", "zed", "alice", "bob"]
    assert [r.key.user for r in matching(rows, "AL")] == ["alice"]
    assert [r.key.user for r in above(rows, 90)] == ["alice"]
    assert above(rows, 95) == []


def test_the_key_map():
    options = {"sort": "percent", "filter_text": "", "paused": False, "filter_editing": False}
    options, _ = apply_key(options, "s")
    assert options["sort"] == "rate"
    options, _ = apply_key(options, "u")
    assert options["sort"] == "user"
    for key in "/al\x7fi":
        options, _ = apply_key(options, key)
    assert options["filter_editing"] and options["filter_text"] == "ai"
    options, done = apply_key(options, "q")  # typed into the filter, not a quit
    assert not done and options["filter_text"] == "aiq"
    options, _ = apply_key(options, "\r")
    options, _ = apply_key(options, "p")
    assert options["paused"] and not options["filter_editing"]
    options, _ = apply_key(options, "\x1b")
    assert options["filter_text"] == ""
    assert apply_key(options, "q")[1]


def test_snapshot_json_and_table(snapshot):
    screen = Screen(_rows(snapshot), [SourceState("jmx b1"), SourceState("jmx b2", "cannot reach it")], "file q.toml")
    document = snapshot_document(screen)
    assert [r["user"] or r["client_id"] for r in document["rows"]] == ["alice", "bob", "zed"]  # idle hidden
    alice = document["rows"][0]
    assert alice["quota"] == 2_000_000.0 and alice["level"] == 3 and alice["quota_key"] == "producer_byte_rate"
    assert alice["percent_of_quota"] == pytest.approx(95.0) and alice["throttled"]
    assert document["rows"][2]["quota"] is None and document["rows"][2]["percent_of_quota"] is None
    assert document["sources"][1] == {"name": "jmx b2", "reachable": False, "error": "cannot reach it"}
    table = plain_table(screen).splitlines()
    assert table[0].split()[:3] == ["TYPE", "USER", "CLIENT-ID"]
    assert "no quota" in table[3] and table[-1] == "# jmx b2: unreachable (cannot reach it)"
    empty = plain_table(Screen([], [SourceState("jmx b1")], "none"))
    assert empty.endswith("# no traffic: no quota sensor measured anything in its window")


@pytest.mark.parametrize(
    "value, kind, text",
    [
        (1_048_576, "produce", "1.05 MB/s"),
        (512, "fetch", "512 B/s"),
        (50, "request", "50.0 %"),
        (None, "fetch", "none"),
    ],
)
def test_amounts_are_shown_in_their_units(value, kind, text):
    assert format_amount(value, kind) == text


def test_metrics_addresses():
    assert metrics_url("127.0.0.1:9404") == "http://127.0.0.1:9404/metrics"
    assert metrics_url("https://b1:7071/metrics") == "https://b1:7071/metrics"
    from kconfigs.errors import UsageError

    with pytest.raises(UsageError, match="is not HOST:PORT"):
        metrics_url("broker1")
