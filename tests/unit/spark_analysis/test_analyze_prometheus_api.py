"""Pure parts of the Prometheus source: durations, instants, chunks under the points limit, and
the text lines the reader gets (label values escaped as the exposition format wants)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconfigs.errors import UsageError
from kconfigs_analysis import metric_names as names
from kconfigs_analysis.prometheus_api import PrometheusQuery, _headers, series_lines
from kconfigs_analysis.prometheus_time import chunks, parse_duration_s, parse_instant_s, query_range_of

NOW_S = 1_800_000_000.0


@pytest.mark.parametrize(
    ("text", "seconds"), [("15s", 15), ("1h30m", 5400), ("7d", 604800), ("250ms", 0.25), ("2.5", 2.5)]
)
def test_durations_in_prometheus_syntax(text, seconds):
    assert parse_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "1.5h", "-3s", "0s", "0"])
def test_bad_durations_are_usage_errors(text):
    with pytest.raises(UsageError):
        parse_duration_s(text)


def test_instants_relative_absolute_and_iso():
    assert parse_instant_s("now", NOW_S) == NOW_S
    assert parse_instant_s("24h", NOW_S) == NOW_S - 86400
    assert parse_instant_s("1714557600", NOW_S) == 1714557600
    assert parse_instant_s("2024-05-01T10:00:00Z", NOW_S) == 1714557600
    assert parse_instant_s("2024-05-01T12:00:00+02:00", NOW_S) == 1714557600
    assert query_range_of("2h", "1h", NOW_S) == (NOW_S - 3 * 3600, NOW_S - 3600)  # --since counts back from --until
    with pytest.raises(UsageError, match="is not before"):
        query_range_of("2024-05-02T00:00:00Z", "2024-05-01T00:00:00Z", NOW_S)
    with pytest.raises(UsageError, match="Invalid time"):
        parse_instant_s("yesterday", NOW_S)


def _instants(start: float, end: float, step: float) -> list[float]:
    out, k = [], 0
    while start + k * step <= end + 1e-9:
        out.append(round(start + k * step, 6))
        k += 1
    return out


@settings(deadline=None, max_examples=60)
@given(st.integers(0, 10**6), st.integers(1, 3_000), st.sampled_from([0.5, 1, 15, 60]), st.integers(2, 50))
def test_chunks_cover_every_instant_once_and_stay_under_the_limit(start, length, step, max_points):
    start_s, end_s = float(start), float(start + length)
    parts = chunks(start_s, end_s, step, max_points)
    got = [x for a, b in parts for x in _instants(a, b, step)]
    assert got == _instants(start_s, end_s, step)  # no gap, no overlap, same instants as one query
    assert all(len(_instants(a, b, step)) <= max_points for a, b in parts)


def test_a_day_at_15s_is_one_query_and_a_week_five():
    assert len(chunks(0, 86400, 15)) == 1
    assert len(chunks(0, 7 * 86400, 15)) == 5


def test_series_lines_escape_label_values_for_the_reader():
    result = [
        {
            "metric": {
                "__name__": "kafka_server_quota_byte_rate",
                "clientId": '"etl:nightly"',
                "user": "a\\b\nc",
                "resource": "Produce",
            },
            "values": [[1714557600.5, "1048310.2"], [1714557601, "NaN"]],
        }
    ]
    lines = list(series_lines(result))
    assert lines[0] == (
        'kafka_server_quota_byte_rate{clientId="\\"etl:nightly\\"",resource="Produce",user="a\\\\b\\nc"} '
        "1048310.2 1714557600500\n"
    )
    assert lines[1].endswith(" NaN 1714557601000\n")
    assert all(re.match(names.PROM_LINE_RE, line.rstrip("\n")) for line in lines)


def test_bearer_token_wins_over_basic_auth():
    query = PrometheusQuery("http://p:9090", 0, 1, user="u", password="p", token="t0k")
    assert _headers(query)["Authorization"] == "Bearer t0k"
    basic = PrometheusQuery("http://p:9090", 0, 1, user="u", password="p")
    assert _headers(basic)["Authorization"] == "Basic dTpw"
    assert "Authorization" not in _headers(PrometheusQuery("http://p:9090", 0, 1))


def test_selector_names_every_quota_metric_and_takes_matchers():
    query = PrometheusQuery("http://p:9090", 0, 1, match='job="kafka"')
    assert query.selector.startswith('{__name__=~"(?i)kafka_server_') and query.selector.endswith(', job="kafka"}')


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Give metric dumps (DUMP...) or --prometheus-url URL\n"),
        (["--since", "24h", "x.csv"], "--since reads from Prometheus: give --prometheus-url too\n"),
        (
            ["--prometheus-url", "http://127.0.0.1:1", "--step", "fast"],
            "Invalid duration 'fast': use e.g. 15s, 30m, 24h, 7d or 1h30m\n",
        ),
        (
            ["--prometheus-url", "http://127.0.0.1:1", "--since", "1714600000", "--until", "1714500000"],
            "--since (1714600000) is not before --until (1714500000)\n",
        ),
    ],
)
def test_source_options_are_checked_before_spark_starts(args, message):
    from harness.cli import run_main

    code, out, err = run_main("analyze", "report", *args, "--quiet")
    assert (code, out, err) == (1, "", message)
