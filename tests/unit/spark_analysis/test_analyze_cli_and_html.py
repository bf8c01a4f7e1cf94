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
        "throttle_ms_total": 10.0,
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
