"""What the gateway says about itself to operators: the quota store it serves (named without
secrets), and its readiness for ``/readyz`` (the upstream reachable and the quotas loaded)."""

from __future__ import annotations

import os
import socket
from typing import Callable, Iterable

from kconfigs.profiles import StoreOptions

#: one TCP dial of an upstream per ``/readyz``: short enough for a probe's 1-2 s timeout
READINESS_DIAL_TIMEOUT_S = 0.5


def store_description(store: StoreOptions, security_protocol: str | None = None) -> str:
    """``ZooKeeper zk1:2181/kafka``, ``Kafka cluster b1:9092 (admin API, SASL_PLAINTEXT)``,
    ``embedded store /var/lib/kconfigs/quotas.db``: kind and address, never a credential (the
    ZooKeeper digest, the --command-config's passwords are only named as being used)."""
    if store.zookeeper:
        extras = [what for what, used in (("digest auth", store.zk_auth), ("TLS", store.zk_tls_config_file)) if used]
        return f"ZooKeeper {store.zookeeper}" + (f" ({', '.join(extras)})" if extras else "")
    protocol = (security_protocol or "PLAINTEXT").upper()
    if store.bootstrap_server:
        return f"Kafka cluster {store.bootstrap_server} (admin API, {protocol})"
    if store.bootstrap_controller:
        return f"KRaft controllers {store.bootstrap_controller} (admin API, {protocol})"
    if store.store_path:
        return f"embedded store {store.store_path}"
    from kconfigs.stores.sqlite import default_store_path

    return f"embedded store {default_store_path()} (the default)"


def admin_security_protocol(command_config: str | None) -> str:
    """``security.protocol`` of an admin connection's properties (Kafka's default PLAINTEXT).

    :raises ValidationError: the file cannot be read."""
    if not command_config:
        return "PLAINTEXT"
    from kconfigs.java_properties import load_properties_file

    return load_properties_file(command_config).get("security.protocol", "PLAINTEXT").strip() or "PLAINTEXT"


def os_error_reason(err: BaseException) -> str:
    """``Connection refused`` rather than asyncio's or socket's long wording around it."""
    errno = getattr(err, "errno", None)
    if errno and errno > 0:
        return os.strerror(errno)
    return getattr(err, "strerror", None) or str(err) or type(err).__name__  # e.g. a name that does not resolve


def unreachable_reason(upstreams: Iterable[tuple[str, int]], timeout_s: float) -> str | None:
    """None when one upstream accepts a TCP connection, else the last failure's reason."""
    reason = "no upstream"
    for host, port in upstreams:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
        except OSError as err:
            reason = "timed out" if isinstance(err, TimeoutError) else os_error_reason(err)
            continue
        return None
    return reason


class Readiness:
    """``/readyz``: ready once the first quota snapshot is installed and while an upstream accepts
    connections. A quota store lost after that leaves the gateway ready: it enforces the last
    quotas (the log says so), as a broker keeps its quotas while ZooKeeper is away."""

    def __init__(
        self,
        upstreams: Iterable[tuple[str, int]],
        quotas_loaded: Callable[[], bool],
        store: str,
        dial_timeout_s: float = READINESS_DIAL_TIMEOUT_S,
    ):
        self._upstreams = tuple(upstreams)
        self._quotas_loaded = quotas_loaded
        self._store = store
        self._dial_timeout_s = dial_timeout_s

    def not_ready(self) -> str | None:
        """One line saying why the gateway is not ready, or None. Dials the upstreams (blocking)."""
        if not self._quotas_loaded():
            return f"quotas not loaded yet from {self._store}"
        reason = unreachable_reason(self._upstreams, self._dial_timeout_s)
        if reason is not None:
            names = ",".join(f"{host}:{port}" for host, port in self._upstreams)
            return f"upstream {names} not reachable ({reason})"
        return None
