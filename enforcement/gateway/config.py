"""Gateway configuration: one frozen value, validated before anything binds a port.

Command-line options cover the common settings; a TOML file (``--config``) covers the rest. Keys
in the file are the field names below. Every limit and timeout is named with its unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from kconfigs.errors import UsageError, ValidationError
from kconfigs.profiles import store_option_fields

if TYPE_CHECKING:
    from kconfigs.profiles import StoreOptions

Address = tuple[str, int]


def parse_address(text: str, what: str) -> Address:
    """``host:port`` -> (host, port). :raises ValidationError:"""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValidationError(f"Invalid {what} '{text}': expected host:port")
    return host.strip("[]"), int(port)


@dataclass(frozen=True)
class GatewayConfig:
    upstreams: tuple[Address, ...] = ()
    listen: Address = ("127.0.0.1", 9092)
    #: None: the listen host, as Kafka's advertised.listeners defaults to its listeners
    advertised_host: str | None = None
    #: first port for per-broker listeners; 0 = OS-assigned ports (tests)
    broker_port_start: int = 0
    max_frame_bytes: int = 100 * 1024 * 1024
    max_preauth_frame_bytes: int = 512 * 1024
    max_inflight_requests: int = 256
    upstream_connect_timeout_ms: int = 10_000
    drain_timeout_ms: int = 30_000
    #: Kafka's connections.max.idle.ms: no request read and no response written for this long closes
    connections_max_idle_ms: int = 600_000
    #: a request whose first byte arrived must be complete within this (clients' request.timeout.ms);
    #: bounds slowloris clients that dribble a frame byte by byte
    request_read_timeout_ms: int = 30_000
    #: open client connections, all listeners (Kafka's max.connections; over it: closed on accept)
    max_connections: int = 10_000
    #: open client connections per IP (Kafka's max.connections.per.ip; 0 = no limit)
    max_connections_per_ip: int = 0
    require_authentication: bool = False
    #: quota admin (DescribeClientQuotas/AlterClientQuotas): "auto" = answer from our store when
    #: the upstream lacks the APIs, "gateway" = always ours, "passthrough" = always the broker's
    quota_admin: str = "auto"
    #: principals allowed to AlterClientQuotas through the gateway ("*" = anyone); describe is open
    quota_admin_principals: tuple[str, ...] = ()
    #: the quota store, named as for every other command (kconfigs.profiles.resolve_store_options:
    #: these, then the KCONFIGS_* variables, then a profile)
    zookeeper: str | None = None
    bootstrap_server: str | None = None
    bootstrap_controller: str | None = None
    command_config: str | None = None
    store_path: str | None = None
    zk_auth: str | None = None
    zk_tls_config_file: str | None = None
    profile: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_client_ca_file: str | None = None  # set => mTLS required, principal = certificate DN
    metrics_listen: Address | None = ("127.0.0.1", 9404)
    usage_log_path: str | None = None
    usage_log_window_ms: int = 1_000  # one Kafka quota sample (docs/usage-log.md)
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    enforce_producer_ids: bool = True
    log_format: str = "json"
    #: data plane worker threads (0 = one per core)
    worker_threads: int = 0
    #: instances with the same fleet name in front of one cluster share each quota (docs/gateway.md)
    fleet_name: str | None = None
    #: the coordination topic (None: __kconfigs_fleet_<fleet_name>, created when missing)
    fleet_topic: str | None = None
    #: how often the instances of a fleet report their usage and recompute their shares
    fleet_period_ms: int = 250
    extra: Mapping[str, Any] = field(default_factory=dict)

    def validate(self) -> "GatewayConfig":
        """:raises ValidationError: with one actionable line."""
        if not self.upstreams:
            raise ValidationError(
                "At least one --upstream host:port is required (or name the cluster with --bootstrap-server)"
            )
        positive = (
            "max_frame_bytes",
            "max_preauth_frame_bytes",
            "max_inflight_requests",
            "upstream_connect_timeout_ms",
            "drain_timeout_ms",
            "usage_log_window_ms",
            "quota_window_num",
            "quota_window_size_seconds",
            "connections_max_idle_ms",
            "request_read_timeout_ms",
            "max_connections",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValidationError(f"Gateway setting {name} must be positive, got {getattr(self, name)}")
        if self.max_connections_per_ip < 0:
            raise ValidationError(
                f"Gateway setting max_connections_per_ip must be >= 0, got {self.max_connections_per_ip}"
            )
        if self.max_preauth_frame_bytes > self.max_frame_bytes:
            raise ValidationError("max_preauth_frame_bytes cannot exceed max_frame_bytes")
        if self.quota_admin not in ("auto", "gateway", "passthrough"):
            raise ValidationError(f"quota_admin must be auto, gateway or passthrough, got '{self.quota_admin}'")
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ValidationError("TLS needs both tls_cert_file and tls_key_file")
        if self.tls_client_ca_file and not self.tls_cert_file:
            raise ValidationError("tls_client_ca_file (mTLS) needs tls_cert_file and tls_key_file")
        if self.worker_threads < 0:
            raise ValidationError(f"Gateway setting worker_threads must be >= 0, got {self.worker_threads}")
        if not 100 <= self.fleet_period_ms <= 500:
            raise ValidationError(f"Gateway setting fleet_period_ms must be 100 to 500, got {self.fleet_period_ms}")
        for name in ("fleet_name", "fleet_topic"):
            value = getattr(self, name)
            if value is not None and not _FLEET_NAME.fullmatch(value):
                raise ValidationError(
                    f"Gateway setting {name} must be 1 to 200 of the characters a topic name takes "
                    f"(letters, digits, '.', '_', '-'), got '{value}'"
                )
        if self.fleet_topic and not self.fleet_name:
            raise ValidationError("fleet_topic needs fleet_name (the instances that share the topic)")
        if not 0 <= self.broker_port_start <= 65535:
            raise ValidationError(f"broker_port_start must be a port number, got {self.broker_port_start}")
        for host, port in self.upstreams:
            if _same_listener(self.listen, (host, port)):
                raise ValidationError(
                    f"--upstream {host}:{port} is the gateway's own --listen address: every connection would "
                    "open another one to itself; give the brokers' address"
                )
        return replace(self, advertised_host=self._advertised_host())

    def store_flags(self) -> dict[str, str | None]:
        """The store settings as the flags :func:`kconfigs.profiles.resolve_store_options` takes."""
        return {name: getattr(self, name) for name in STORE_SETTINGS}

    def with_upstreams_of(self, store: "StoreOptions", security_protocol: str) -> "GatewayConfig":
        """With no upstream given and the cluster named as the quota source (``--bootstrap-server``),
        the upstream is that cluster: the gateway then enforces the quotas of the brokers it fronts.
        ``security_protocol`` is the admin connection's (``--command-config``). :raises ValidationError:
        controllers, or a TLS listener, as the implied upstream (the gateway reaches brokers in
        plaintext, with or without SASL, which its clients do themselves)."""
        if self.upstreams:
            return self
        if store.bootstrap_controller:
            raise ValidationError(
                "--bootstrap-controller names KRaft controllers, which serve no clients: "
                "give --upstream, the brokers' address"
            )
        if not store.bootstrap_server:
            return self
        if security_protocol.upper() in ("SSL", "SASL_SSL"):
            raise ValidationError(
                f"--bootstrap-server {store.bootstrap_server} is reached with {security_protocol.upper()}, and the "
                "gateway reaches brokers without TLS: give --upstream, a PLAINTEXT or SASL_PLAINTEXT listener"
            )
        return replace(self, upstreams=_upstreams("upstreams", store.bootstrap_server))

    def with_worker_threads_from(self, environ: Mapping[str, str]) -> "GatewayConfig":
        """``worker_threads`` 0 (unset) takes ``KCONFIGS_GATEWAY_WORKERS`` when that is set; 0 left
        means one per core (tokio's default). :raises UsageError: a variable that is not a whole
        number (an empty one included)."""
        raw = environ.get("KCONFIGS_GATEWAY_WORKERS")
        if self.worker_threads or raw is None:
            return self
        if not raw.strip().isdigit():
            raise UsageError(
                f"KCONFIGS_GATEWAY_WORKERS must be a whole number of threads (0 = one per core), got {raw!r}"
            )
        return replace(self, worker_threads=int(raw))

    def _advertised_host(self) -> str:
        """The host clients are told to connect to. Like a broker's advertised.listeners it
        defaults to the listen host, and it cannot be a wildcard: a gateway listening on 0.0.0.0
        that advertised 127.0.0.1 would serve local clients and send every remote one to its
        own loopback, with nothing logged. :raises ValidationError:"""
        if self.advertised_host is not None:
            if _is_wildcard(self.advertised_host):
                raise ValidationError(
                    f"--advertised-host {self.advertised_host} is a wildcard, not an address a client can "
                    "connect to: give a name or address clients reach this host by"
                )
            return self.advertised_host
        host, port = self.listen
        if _is_wildcard(host):
            shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            raise ValidationError(
                f"--listen {shown} accepts clients from other hosts, and they must be told where to "
                "connect: give --advertised-host (a name or address they reach this host by)"
            )
        return host


def _same_listener(listen: Address, upstream: Address) -> bool:
    """An upstream that is plainly the listener itself: same port, and the same host, a loopback
    address while listening everywhere, or ``localhost`` while listening on 127.0.0.1 or ::1.
    Names are not resolved (validation does no I/O), so only these literal cases are caught."""
    (listen_host, listen_port), (host, port) = listen, upstream
    if listen_port != port:
        return False
    listen_host, host = listen_host.lower().strip("[]"), host.lower().strip("[]")
    if listen_host == host or (_is_wildcard(listen_host) and _is_loopback(host)):
        return True
    return host == "localhost" and listen_host in ("127.0.0.1", "::1")


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_wildcard(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


#: the settings that name the quota store: the StoreOptions fields a command line sets (plus the profile)
STORE_SETTINGS = store_option_fields()

_ADDRESS_FIELDS = {"listen": "listen address", "metrics_listen": "metrics address"}
_ASYNCIO_ONLY = "belonged to the removed asyncio data path"
#: settings that no longer exist, refused by name with the reason, so that a file written for an
#: older gateway learns what changed instead of reading a bare "unknown setting"
RETIRED_SETTINGS: Mapping[str, str] = {
    "data_plane": "is gone: the native data plane is the only one",
    "zero_copy": _ASYNCIO_ONLY,
    "write_buffer_high_bytes": _ASYNCIO_ONLY,
    "receive_buffer_bytes": _ASYNCIO_ONLY,
    "metadata_splice_threshold_bytes": _ASYNCIO_ONLY,
}


def config_from_mapping(values: Mapping[str, Any], base: GatewayConfig | None = None) -> GatewayConfig:
    """Overlay ``values`` (TOML table or CLI options; None values ignored) on ``base``.

    :raises ValidationError: for unknown keys or badly typed values.
    """
    known = {f.name: f for f in fields(GatewayConfig)}
    changes: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        if key in RETIRED_SETTINGS:
            raise ValidationError(f"Gateway setting '{key}' {RETIRED_SETTINGS[key]}: remove it")
        if key not in known or key == "extra":
            raise ValidationError(f"Unknown gateway setting '{key}'")
        changes[key] = _coerce(key, value)
    return replace(base or GatewayConfig(), **changes)


#: settings where an empty value means something: no metrics endpoint; no upstream (refused
#: by validate with its own line); nobody may alter quotas
_EMPTY_ALLOWED = frozenset({"metrics_listen", "upstreams", "quota_admin_principals"})


def _coerce(key: str, value: Any) -> Any:
    """A setting's value from TOML or the command line, checked for its kind. :raises ValidationError:"""
    if isinstance(value, str) and not value.strip() and key not in _EMPTY_ALLOWED:
        # an unset variable in a unit file or template: never "no usage log" or "no TLS" in silence
        raise ValidationError(f"Gateway setting {key} is empty: give a value or leave it out")
    return _COERCERS.get(key, _typed)(key, value)


def _string_list(key: str, value: Any) -> list[str]:
    """``"a,b"`` or ``["a", "b"]``, blank items dropped."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"Gateway setting {key} must be a list of strings, got {value!r}")
    return [v.strip() for v in value if v.strip()]


def _upstreams(key: str, value: Any) -> tuple[Address, ...]:
    return tuple(parse_address(v, "upstream") for v in _string_list(key, value))


def _principals(key: str, value: Any) -> tuple[str, ...]:
    return tuple(_string_list(key, value))


def _address(key: str, value: Any) -> Address | None:
    """``"host:port"`` or ``["host", port]``; ``metrics_listen = ""`` (or false) turns it off."""
    if key == "metrics_listen" and value in ("", False):
        return None
    if isinstance(value, str):
        return parse_address(value, _ADDRESS_FIELDS[key])
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str) and type(value[1]) is int:
        return value[0], value[1]
    raise ValidationError(f'Gateway setting {key} must be "host:port", got {value!r}')


def _typed(key: str, value: Any) -> Any:
    """Ints, booleans and strings as their defaults are (a TOML number for a path, or true for a
    size: bool is an int to Python)."""
    expected = str if key in _TEXT_SETTINGS else type(getattr(GatewayConfig(), key))
    if expected in (int, bool, str) and (
        not isinstance(value, expected) or (expected is int and isinstance(value, bool))
    ):
        raise ValidationError(f"Gateway setting {key} must be {expected.__name__}, got {value!r}")
    return value


_COERCERS = {
    "upstreams": _upstreams,
    "quota_admin_principals": _principals,
    "listen": _address,
    "metrics_listen": _address,
}


#: text settings that are None by default: a TOML number there (usage_log_path = 5) would be
#: opened as a file descriptor
_TEXT_SETTINGS = frozenset(
    {
        "advertised_host",
        *STORE_SETTINGS,
        "profile",
        "tls_cert_file",
        "tls_key_file",
        "tls_client_ca_file",
        "usage_log_path",
        "fleet_name",
        "fleet_topic",
    }
)

_FLEET_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a gateway TOML file (top-level keys, or a ``[gateway]`` table). :raises ValidationError:"""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as err:
        raise ValidationError(f"Cannot read gateway config {path}: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise ValidationError(f"Invalid TOML in {path}: {err}") from None
    if "gateway" not in data:
        return dict(data)
    table, elsewhere = data["gateway"], sorted(k for k in data if k != "gateway")
    if not isinstance(table, dict):
        raise ValidationError(f"{path}: 'gateway' must be a table ([gateway]) holding the settings")
    if elsewhere:  # only one place was read: the others were ignored in silence
        raise ValidationError(
            f"{path}: settings both at the top level ({', '.join(elsewhere)}) and under [gateway]: "
            "put them all in one place"
        )
    return dict(table)
