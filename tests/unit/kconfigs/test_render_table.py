"""``kconfigs describe -o table`` at 80 columns: nothing cut short (no ellipsis), every principal
and key readable in full once the folded lines are joined back."""

from __future__ import annotations

from rich.console import Console

from kconfigs.model import DEFAULT, QuotaEntity, QuotaRecord
from kconfigs.render import records_table

LONG_USER = "CN=very-long-service-principal,OU=platform-engineering,O=acme,L=Amsterdam,C=NL"
RECORDS = [
    QuotaRecord(
        QuotaEntity(user=LONG_USER, client_id="consumer-group-analytics-pipeline-7"),
        {"controller_mutation_rate": "10.5", "producer_byte_rate": "104857600"},
    ),
    QuotaRecord(QuotaEntity(ip="2001:db8:85a3::8a2e:370:7334"), {"connection_creation_rate": "20"}),
    QuotaRecord(QuotaEntity(user=DEFAULT), {"consumer_byte_rate": "2097152"}),
]


def _table(width: int) -> list[str]:
    import io

    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    records_table(RECORDS, console)
    return console.export_text().splitlines()


def test_an_80_column_table_fits_and_cuts_nothing():
    lines = _table(80)
    assert max(len(line) for line in lines) <= 80
    text = "\n".join(lines)
    assert "…" not in text
    first_column = "".join(line.split("│")[1].strip() for line in lines if line.startswith("│"))
    assert f"'{LONG_USER}'" in first_column and "'consumer-group-analytics-pipeline-7'" in first_column
    for key, value in [
        ("controller_mutation_rate", "10.5"),
        ("producer_byte_rate", "104,857,600"),
        ("connection_creation_rate", "20"),
        ("consumer_byte_rate", "2,097,152"),
    ]:
        assert any(key in line and line.rstrip(" │").endswith(value) for line in lines), key


def test_each_entity_is_named_once_above_its_keys():
    first_column = [line.split("│")[1].strip() for line in _table(220) if line.startswith("│")]
    assert first_column == [
        f"user-principal '{LONG_USER}', client-id 'consumer-group-analytics-pipeline-7'",
        "",
        "ips '2001:db8:85a3::8a2e:370:7334'",
        "default user-principal",
    ]
