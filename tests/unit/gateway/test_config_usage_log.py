"""Gateway config validation, usage-log windows (docs/usage-log.md schema), frame size limits."""

import asyncio
import io
import json
import os
import shutil
import struct

import pytest

from kconfigs.errors import ValidationError
from kconfigs_enforcement._native import testing as dataplane
from kconfigs_enforcement.gateway import framing
from kconfigs_enforcement.gateway.config import RETIRED_SETTINGS, config_from_mapping, parse_address
from kconfigs_enforcement.gateway.headers import MalformedFrame
from kconfigs_enforcement.gateway.usage_log import UsageLog


def test_cli_values_override_file_values_and_parse_addresses():
    base = config_from_mapping({"upstreams": ["a:1"], "max_inflight_requests": 8})
    config = config_from_mapping(
        {"upstreams": "b:2,c:3", "listen": "0.0.0.0:19092", "advertised_host": "gw.example.com"}, base
    ).validate()
    assert config.upstreams == (("b", 2), ("c", 3))
    assert config.listen == ("0.0.0.0", 19092) and config.max_inflight_requests == 8


@pytest.mark.parametrize(
    "listen, advertised",
    [("127.0.0.1:9092", "127.0.0.1"), ("10.1.2.3:9092", "10.1.2.3"), ("[::1]:9092", "::1"), ("gw:9092", "gw")],
)
def test_the_advertised_host_defaults_to_the_listen_host_as_a_brokers_does(listen, advertised):
    config = config_from_mapping({"upstreams": "b:1", "listen": listen}).validate()
    assert config.advertised_host == advertised


@pytest.mark.parametrize("listen", ["0.0.0.0:9092", "[::]:9092", "[0:0:0:0:0:0:0:0]:9092"])
def test_a_wildcard_listen_needs_an_advertised_host(listen):
    """Advertising 127.0.0.1 from 0.0.0.0 served local clients and sent every remote one to its own
    loopback; Kafka refuses advertised.listeners on 0.0.0.0 for the same reason."""
    host = listen.rpartition(":")[0]
    with pytest.raises(ValidationError) as refused:
        config_from_mapping({"upstreams": "b:1", "listen": listen}).validate()
    assert str(refused.value) == (
        f"--listen {host}:9092 accepts clients from other hosts, and they must be told where to connect: "
        "give --advertised-host (a name or address they reach this host by)"
    )
    for wildcard in ("0.0.0.0", "::"):
        with pytest.raises(ValidationError, match=f"--advertised-host {wildcard} is a wildcard"):
            config_from_mapping({"upstreams": "b:1", "listen": listen, "advertised_host": wildcard}).validate()


@pytest.mark.parametrize(
    "values, message",
    [
        ({}, "At least one --upstream"),
        ({"upstreams": "a:1", "max_frame_bytes": 0}, "max_frame_bytes must be positive"),
        ({"upstreams": "a:1", "quota_admin": "maybe"}, "quota_admin must be"),
        ({"upstreams": "a:1", "tls_cert_file": "c.pem"}, "TLS needs both"),
    ],
)
def test_invalid_settings_give_one_line(values, message):
    with pytest.raises(ValidationError, match=message):
        config_from_mapping(values).validate()


def test_unknown_key_and_bad_address_are_rejected():
    with pytest.raises(ValidationError, match="Unknown gateway setting 'max_frames'"):
        config_from_mapping({"max_frames": 1})
    with pytest.raises(ValidationError, match="Invalid upstream 'broker'"):
        parse_address("broker", "upstream")
    with pytest.raises(ValidationError, match="must be int"):
        config_from_mapping({"max_inflight_requests": "many"})


def test_usage_log_writes_one_line_per_entity_kind_and_window():
    now = [1_714_557_600_250]
    out = io.StringIO()
    log = UsageLog(
        out, 1000, lambda kind, user, client, ip: 2048.0 if kind == "produce" else None, clock_ms=lambda: now[0]
    )
    log.record("produce", "alice", "app", "10.0.0.7", 1000, 0)
    log.record("produce", "alice", "app", "10.0.0.7", 500, 30)
    log.record("connection", None, None, "10.0.0.7", 1, 0)
    now[0] = 1_714_557_601_100  # next window: the first one is written
    log.record("fetch", "alice", "app", "10.0.0.7", 0, 0)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines == [
        {
            "ts_ms": 1714557600000,
            "window_ms": 1000,
            "user": None,
            "client_id": None,
            "ip": "10.0.0.7",
            "kind": "connection",
            "value": 1,
            "throttle_ms": 0,
            "quota": None,
        },
        {
            "ts_ms": 1714557600000,
            "window_ms": 1000,
            "user": "alice",
            "client_id": "app",
            "ip": "10.0.0.7",
            "kind": "produce",
            "value": 1500,
            "throttle_ms": 30,
            "quota": 2048.0,
        },
    ]
    now[0] = 1_714_557_602_000
    log.roll(now[0])
    assert len(out.getvalue().splitlines()) == 2  # the idle fetch window (value 0, throttle 0) is omitted


def test_usage_totals_kept_elsewhere_land_in_their_own_windows():
    """The native data plane keeps its charges' totals per window; the log pulls them before it
    writes a window, so each lands in the window it was charged in, merged with Python's own."""
    now = [1_714_557_600_250]
    out = io.StringIO()
    log = UsageLog(out, 1000, lambda *_: None, clock_ms=lambda: now[0])
    pending = []
    log.sources.append(lambda: pending.pop() if pending else [])
    log.record("produce", "alice", "app", "10.0.0.7", 24, 0)  # charged in Python, first window
    pending.append(
        [
            (1_714_557_600_000, "produce", "alice", "app", "10.0.0.7", 1000.0, 0.0),
            (1_714_557_601_000, "produce", "alice", "app", "10.0.0.7", 300.0, 12.0),
        ]
    )
    now[0] = 1_714_557_602_100
    log.roll(now[0])
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(l["ts_ms"], l["value"], l["throttle_ms"]) for l in lines] == [
        (1_714_557_600_000, 1024, 0),
        (1_714_557_601_000, 300, 12),
    ]
    log.flush()
    assert len(out.getvalue().splitlines()) == 2  # pulled once: nothing counted twice


def test_frame_size_limits_checked_from_the_prefix():
    """The data plane checks a length prefix before allocating the body (a TLS ClientHello read
    as a length: 0x16030100 = 369 098 752 bytes, named as such)."""
    min_request_bytes = 10  # api_key + api_version + correlation_id + client_id length
    dataplane.check_frame_size(10, min_request_bytes, 100)
    with pytest.raises(ValueError, match="exceeds the limit of 104857600 bytes .a TLS handshake"):
        dataplane.check_frame_size(0x16030100, min_request_bytes, 100 * 1024 * 1024)
    with pytest.raises(ValueError, match="below the minimum of 10 bytes"):
        dataplane.check_frame_size(-1, min_request_bytes, 100)


def test_control_plane_frames_are_limited_from_the_prefix():
    """The auth probe's own connection reads frames the same way."""

    async def read(data: bytes):
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return await framing.read_frame(reader, 4, 64)

    assert asyncio.run(read(struct.pack(">i", 5) + b"hello")) == b"hello"
    assert asyncio.run(read(b"")) is None
    with pytest.raises(MalformedFrame, match="exceeds the limit of 64 bytes"):
        asyncio.run(read(struct.pack(">i", 65) + b"x"))
    with pytest.raises(asyncio.IncompleteReadError):
        asyncio.run(read(struct.pack(">i", 8) + b"abc"))


@pytest.mark.parametrize("key", sorted(RETIRED_SETTINGS))
def test_settings_of_the_removed_asyncio_path_are_refused_by_name(key):
    with pytest.raises(ValidationError, match=f"^Gateway setting '{key}' .*: remove it$"):
        config_from_mapping({"upstreams": "a:1", key: 1})


@pytest.mark.parametrize(
    "listen, upstream, loops",
    [
        ("127.0.0.1:9092", "127.0.0.1:9092", True),
        ("127.0.0.1:9092", "localhost:9092", True),
        ("[::1]:9092", "localhost:9092", True),
        ("127.0.0.1:9092", "127.0.0.2:9092", False),  # another loopback address: another socket
        ("[::1]:9092", "127.0.0.1:9092", False),
        ("10.1.2.3:9092", "10.1.2.3:9092", True),
        ("127.0.0.1:9092", "127.0.0.1:9093", False),
        ("10.1.2.3:9092", "127.0.0.1:9092", False),
        ("127.0.0.1:9092", "broker:9092", False),
    ],
)
def test_an_upstream_that_is_the_listener_itself_is_refused(listen, upstream, loops):
    """Every client connection opened another to the gateway until it ran out of descriptors."""
    values = {"upstreams": f"b:1,{upstream}", "listen": listen}
    if loops:
        with pytest.raises(ValidationError) as refused:
            config_from_mapping(values).validate()
        assert str(refused.value) == (
            f"--upstream {upstream} is the gateway's own --listen address: every connection would open another "
            "one to itself; give the brokers' address"
        )
    else:
        assert config_from_mapping(values).validate().upstreams[1] == tuple(upstream.rsplit(":", 1)[:1]) + (
            int(upstream.rsplit(":", 1)[1]),
        )


def test_a_wildcard_listener_is_looped_by_a_loopback_upstream():
    values = {"upstreams": "localhost:9092", "listen": "0.0.0.0:9092", "advertised_host": "gw"}
    with pytest.raises(ValidationError, match="is the gateway's own --listen address"):
        config_from_mapping(values).validate()


def _window_writer(path):
    """A usage log on ``path`` and a function writing one window with one line of ``value``."""
    from kconfigs_enforcement.gateway.usage_log import open_usage_log

    now = [1_714_557_600_000]
    lost: list[int] = []
    log = UsageLog(open_usage_log(str(path)), 1000, lambda *_: None, clock_ms=lambda: now[0], lost=lost.append)

    def write_window(value: int) -> None:
        log.record("produce", "alice", "app", None, value, 0)
        now[0] += 1000
        log.roll(now[0])

    return log, write_window, lost


def _values(path) -> list:
    return [json.loads(line)["value"] for line in path.read_text().splitlines()]


@pytest.mark.parametrize("rotation", ["rename", "delete"])
def test_a_rotated_usage_log_is_reopened_by_its_path(tmp_path, rotation):
    """logrotate renames (or its compress step deletes) the file: the gateway kept writing to the
    old descriptor, so the file analyze was given stayed empty and, once deleted, lines were lost."""
    path = tmp_path / "usage.jsonl"
    log, write_window, lost = _window_writer(path)
    write_window(1)
    if rotation == "rename":
        path.rename(tmp_path / "usage.jsonl.1")
    else:
        path.unlink()
    write_window(2)
    write_window(3)
    log.close()
    assert _values(path) == [2, 3] and lost == []
    if rotation == "rename":
        assert _values(tmp_path / "usage.jsonl.1") == [1]


def test_a_usage_log_that_cannot_be_written_loses_windows_with_one_warning_then_resumes(tmp_path, caplog):
    """Its directory removed, then made again: a write error reached the request being charged
    (the usage sink runs on its path); now the windows meanwhile are lost, said once and counted,
    and writing resumes in a new file at the same path."""
    path = tmp_path / "logs" / "usage.jsonl"
    path.parent.mkdir()
    log, write_window, lost = _window_writer(path)
    with caplog.at_level("INFO", logger="kconfigs.gateway"):
        write_window(1)
        shutil.rmtree(path.parent)
        write_window(2)
        write_window(3)
        path.parent.mkdir()
        write_window(4)
    log.close()
    assert _values(path) == [4] and lost == [1, 1] and log.lost_lines == 2
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "usage log" in r.getMessage()]
    assert said == [
        ("WARNING", "usage log: cannot write (No such file or directory): windows are lost until it can"),
        ("INFO", "usage log: writing again (2 lines lost meanwhile)"),
    ]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_loses_windows_without_raising():
    log, write_window, lost = _window_writer("/dev/full")
    for value in (1, 2):
        write_window(value)
    log.close()
    assert lost == [1, 1]
