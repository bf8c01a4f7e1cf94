"""``kconfigs analyze`` help texts (no heavy imports) and the pure HTML/SVG rendering."""

import subprocess
import sys

from click.testing import CliRunner

from kconfigs.cli import cli
from kconfigs_analysis import svg_charts
from kconfigs_analysis.report import ReportData, render_html


def test_every_analyze_help_renders():
    runner = CliRunner()
    for args in (
        ["analyze", "--help"],
        ["analyze", "report", "--help"],
        ["analyze", "recommend", "--help"],
        ["analyze", "whatif", "--help"],
        ["analyze", "generate", "--help"],
        ["analyze", "prepare", "--help"],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 0 and "Usage: cli analyze" in result.output, args
    assert "--proposed" in runner.invoke(cli, ["analyze", "whatif", "--help"]).output


def test_analyze_help_does_not_import_pyspark_rich_or_numpy():
    code = (
        "import sys; from click.testing import CliRunner; from kconfigs.cli import cli; "
        "CliRunner().invoke(cli, ['analyze', 'report', '--help']); "
        "print(sorted(m for m in ('pyspark', 'rich', 'numpy', 'pandas') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def _data(**overrides):
    row = {
        "kind": "produce",
        "user": "<script>alert(1)</script>",
        "client_id": "app",
        "ip": None,
        "samples": 3,
        "p50": 1.0,
        "p95": 2.0,
        "p99": 3.0,
        "max": 4.0,
        "quota": 2.0,
        "util_p99_pct": 150.0,
        "throttled_fraction": 0.5,
        "throttled_samples": 1,
        "throttle_ms_mean": 10.0,
        "mean": 0.5,
    }
    points = [
        {"bucket_ms": 1000 * i, "rate_mean": float(i), "rate_max": i + 1.0, "throttled_samples": i % 2}
        for i in range(5)
    ]
    data = {
        "inputs": ["a.csv"],
        "summary": {"rate_samples": 3, "malformed_lines": 1, "first_ts_ms": 0, "last_ts_ms": 4000},
        "rows": [row],
        "charts": [(row, points)],
        "heat_rows": [("produce x", [0.0, 0.5, None, 1.0, 0.2])],
        "heat_buckets_ms": [0, 1000, 2000, 3000, 4000],
        "malformed_examples": ["<bad line>"],
    }
    return ReportData(**{**data, **overrides})


def test_report_escapes_entity_names_and_malformed_lines():
    page = render_html(_data())
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;bad line&gt;" in page


def test_report_is_self_contained_with_a_line_chart_quota_line_and_heat_map():
    page = render_html(_data())
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    assert page.count('class="chart line-chart"') == 1 and page.count('class="quota-line"') == 1
    assert page.count('class="heat-cell"') == 5 and page.count('class="throttle-tick"') == 2


def test_human_rate_uses_binary_units_for_bytes():
    assert svg_charts.human_rate(1536.0 * 1024, "B/s") == "1.5 MiB/s"
    assert svg_charts.human_rate(3.7, "% thread") == "3.7 % thread"
    assert svg_charts.human_rate(None, "B/s") == "–"


def test_report_table_shows_the_mean_and_names_the_throttle_column_for_what_it_is():
    page = render_html(_data())
    assert "<th>mean</th><th>p50</th>" in page and "throttle ms (sum)" not in page
    assert "mean throttle-time when throttled" in page and ">10 ms<" in page


def test_heat_map_has_a_colour_scale_and_whole_labels():
    label = "produce user=CN=a-very-long-principal,OU=platform-engineering client-id=etl:nightly-batch-loader"
    svg = svg_charts.heat_map([(label, [0.0, 0.5, None])], [0, 60_000, 120_000], "t")
    assert 'class="heat-scale"' in svg and "0 %" in svg and "100 %" in svg and "no data" in svg
    assert f">{label.replace('=', '=')}</text>" in svg  # not cut with an ellipsis
    label_x = float(svg.split('class="axis heat-label"')[0].rsplit('x="', 1)[1].split('"')[0])
    assert label_x >= len(label) * svg_charts.CHAR_PX  # the text fits left of the cells


def test_time_axes_carry_dates():
    start = 1_714_557_600_000  # 2024-05-01 10:00:00 UTC
    points = [
        {"bucket_ms": start + i * 60_000, "rate_mean": 1.0, "rate_max": 2.0, "throttled_samples": 0} for i in range(3)
    ]
    svg = svg_charts.line_chart(points, None, "B/s", "t")
    assert ">2024-05-01 10:00:00<" in svg and ">2024-05-01 10:02:00<" in svg and "time (UTC)" in svg
    heat = svg_charts.heat_map([("x", [0.1, 0.2])], [start, start + 7 * 3600_000], "t")
    assert ">2024-05-01 10:00<" in heat and ">2024-05-01 17:00<" in heat


def _text_y(svg: str, css_class: str) -> float:
    return float(svg.split(f'class="{css_class}"')[0].rsplit("<text", 1)[1].split('y="')[1].split('"')[0])


def test_quota_label_is_beside_its_line_never_on_it_and_y_labels_are_not_clipped():
    points = [{"bucket_ms": i * 1000, "rate_mean": 1.0, "rate_max": 90.0, "throttled_samples": 0} for i in range(3)]
    for quota in (95.2, 100.0, 50.0, 1.0):  # 95.2: the line 7 px under the top of the plot
        svg = svg_charts.line_chart(points, quota, "% thread", "t")
        line_y = float(svg.split('class="quota-line"')[0].rsplit('y1="', 1)[1].split('"')[0])
        label_y = float(svg.split('class="axis quota-label"')[0].rsplit('y="', 1)[1].split('"')[0])
        # 10.5 px text: its baseline 5 px above the line, or its top 3 px below it
        assert label_y <= line_y - 5 or label_y - 10.5 >= line_y + 2, (quota, line_y, label_y)
        assert label_y - 10.5 >= 20  # under the title
    svg = svg_charts.line_chart(points, None, "% thread", "t")
    widest = max(len(t.split(">", 1)[1].split("<")[0]) for t in svg.split('class="axis y-label"')[1:])
    first_label_x = float(svg.split('class="axis y-label"')[0].rsplit('x="', 1)[1].split('"')[0])
    assert first_label_x - widest * svg_charts.CHAR_PX >= 0  # right-aligned text starts inside the box


def test_an_unknown_timezone_is_one_usage_line_before_spark():
    result = CliRunner().invoke(cli, ["analyze", "report", "x.csv", "--timezone", "Mars/Olympus"])
    assert result.exit_code == 2 and "unknown time zone 'Mars/Olympus'" in result.output
    assert "--timezone" in CliRunner().invoke(cli, ["analyze", "report", "--help"]).output


def test_recommendations_on_a_default_show_the_default():
    from kconfigs_analysis.sizing import Recommendation

    rec = Recommendation(
        {"client-id": None}, "produce", "producer_byte_rate", 20_000_000.0, 5_242_880, 4e6, 0.0, "p99 × 1.25", 3
    )
    page = render_html(_data(recommendations=[rec]))
    assert "<td>client-id=&lt;default&gt;</td>" in page and "<td>5242880</td>" in page and "e+" not in page
