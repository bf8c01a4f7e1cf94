"""``kconfigs simulate``: replay a traffic trace against quotas, as a broker would throttle it.

Trace CSV columns: ``time_ms,user,client_id,ip,kind,value`` (a header line is optional), kind in
produce|fetch|request|connection|producer_id (value: bytes, bytes, thread ns, ignored, producer
id). The output CSV repeats each event with ``throttle_ms`` and ``accepted`` (False only for a
dropped connection); a summary goes to stderr. The whole trace is validated before anything is
written, so bad input leaves no partial output.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import click

from kconfigs.commands.options import refuse_empty, refuse_output_over_inputs, store_options
from kconfigs.errors import UsageError, ValidationError
from kconfigs_enforcement.commands.resolve import quota_file_option

HEADER = ["time_ms", "user", "client_id", "ip", "kind", "value"]
KINDS = ("produce", "fetch", "request", "connection", "producer_id")


def _entity_of(kind: str, user: str, client_id: str, ip: str) -> tuple:
    """The entity whose clock must not go backwards: the client, the ip, or the user."""
    if kind == "connection":
        return ("ip", ip)
    if kind == "producer_id":
        return ("user", user)
    return ("client", user, client_id)


def _parse_int(text: str, column: str, where: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValidationError(f"{where}: {column} must be an integer, got {text!r}") from None


def _rows(reader, path: str):
    """csv rows; a malformed record (e.g. a bare carriage return) is a ValidationError."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise ValidationError(f"{path}:{reader.line_num}: malformed CSV ({err})") from None


def parse_trace(text: str, path: str) -> list:
    """Rows of a trace -> ``UsageEvent`` list. :raises ValidationError: naming the line."""
    from kconfigs_enforcement.replay import UsageEvent

    events, last_time = [], {}
    reader = csv.reader(io.StringIO(text))
    for row in _rows(reader, path):
        line_no = reader.line_num  # physical line: a quoted field may span lines
        if not row or (line_no == 1 and row == HEADER):
            continue
        where = f"{path}:{line_no}"
        if len(row) != len(HEADER):
            raise ValidationError(f"{where}: expected {len(HEADER)} columns ({','.join(HEADER)}), got {len(row)}")
        time_text, user, client_id, ip, kind, value_text = row
        if kind not in KINDS:
            raise ValidationError(f"{where}: unknown kind {kind!r} (expected one of {'|'.join(KINDS)})")
        time_ms = _parse_int(time_text, "time_ms", where)
        value = _parse_int(value_text, "value", where) if kind != "connection" or value_text else 0
        if time_ms < 0 or (value < 0 and kind != "producer_id"):
            raise ValidationError(f"{where}: time_ms and value must not be negative")
        if kind == "connection" and not ip:
            raise ValidationError(f"{where}: a connection event needs an ip")
        entity = _entity_of(kind, user, client_id, ip)
        previous = last_time.get(entity)
        if previous is not None and time_ms < previous:
            raise ValidationError(
                f"{where}: time_ms {time_ms} is earlier than {previous} for the same "
                f"{entity[0]} ({', '.join(entity[1:])})"
            )
        last_time[entity] = time_ms
        events.append(UsageEvent(time_ms, user, client_id, ip, kind, value))
    return events


@dataclass
class Summary:
    """Per kind: events, throttled events, max throttle; plus dropped connections."""

    counts: dict = field(default_factory=dict)

    def add(self, kind: str, throttle_ms: int, accepted: bool) -> None:
        events, throttled, worst, dropped = self.counts.get(kind, (0, 0, 0, 0))
        self.counts[kind] = (
            events + 1,
            throttled + (throttle_ms > 0),
            max(worst, throttle_ms),
            dropped + (not accepted),
        )

    def render(self) -> str:
        total = sum(c[0] for c in self.counts.values())
        parts = []
        for kind in KINDS:
            if kind in self.counts:
                events, throttled, worst, dropped = self.counts[kind]
                extra = f", {dropped} dropped" if kind == "connection" else ""
                parts.append(f"{kind} {events} ({throttled} throttled, max {worst} ms{extra})")
        return f"simulated {total} events: " + ("; ".join(parts) if parts else "none")


def simulate_to_csv(events: list, snapshot, config) -> tuple[str, Summary]:
    from kconfigs_enforcement import replay

    out, summary = io.StringIO(), Summary()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER + ["throttle_ms", "accepted"])
    for result in replay.replay(events, snapshot, config):
        event = result.event
        writer.writerow(
            [
                event.time_ms,
                event.user,
                event.client_id,
                event.ip,
                event.kind,
                event.value,
                result.throttle_ms,
                "true" if result.accepted else "false",
            ]
        )
        summary.add(event.kind, result.throttle_ms, result.accepted)
    return out.getvalue(), summary


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except OSError as err:
        raise UsageError(f"Cannot read trace {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise ValidationError(f"{path}: not UTF-8 text") from None


def _write_atomically(path: str, text: str) -> None:
    from kconfigs.atomic_file import write_file_atomically

    try:
        write_file_atomically(path, text)
    except OSError as err:
        raise UsageError(f"Cannot write {path}: {err.strerror}") from None


@click.command()
@click.option(
    "--trace", "trace_path", required=True, type=click.Path(dir_okay=False), callback=refuse_empty, help="Trace CSV."
)
@quota_file_option
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False),
    callback=refuse_empty,
    help="Write the CSV here instead of stdout.",
)
@click.option("--samples", default=11, show_default=True, help="quota.window.num")
@click.option("--window-ms", default=1000, show_default=True, help="quota.window.size.seconds in ms")
@click.option("--legacy-pre-3-8", is_flag=True, help="Brokers before Kafka 3.8 (ring of N samples).")
@store_options
def simulate(trace_path, quotas_path, out_path, samples, window_ms, legacy_pre_3_8, **store_kwargs) -> None:
    """Replay a traffic trace and print each event's throttle_ms, as a Kafka broker computes it."""
    from kconfigs_enforcement import EnforcementConfig
    from kconfigs_enforcement.commands.resolve import load_snapshot

    refuse_output_over_inputs({"--out": out_path}, [trace_path, quotas_path])
    events = parse_trace(_read_text(trace_path), trace_path)
    if samples < 1 or window_ms < 1:
        raise UsageError("--samples and --window-ms must be >= 1")
    snapshot = load_snapshot(quotas_path, store_kwargs)
    config = EnforcementConfig(samples=samples, window_ms=window_ms, legacy_pre_3_8=legacy_pre_3_8)
    text, summary = simulate_to_csv(events, snapshot, config)
    if out_path:
        _write_atomically(out_path, text)
    else:
        click.echo(text, nl=False)
    click.echo(summary.render(), err=True)
