"""A quick look at a ZooKeeper connect string's servers before kazoo is started.

kazoo retries an unresolvable host or a refused port until its connect timeout (10 s) and then
says only that it could not connect. When every server is unresolvable or refuses the
connection, nothing will change in those 10 s: this says so at once, with the cause. A server
that does not answer at all (a dropped SYN) is left to kazoo's timeout.
"""

from __future__ import annotations

import re
import socket

from kconfigs.errors import StoreUnavailable, UsageError

ZK_DEFAULT_PORT = 2181  # what ZooKeeper's ConnectStringParser (and kazoo) assume
PROBE_TIMEOUT_S = 1.0

_SERVER = re.compile(r"\[(?P<v6>[^\]]*)\](?::(?P<v6port>[^:]*))?|(?P<host>[^:]*)(?::(?P<port>.*))?")


def zk_servers(hosts: str) -> list[tuple[str, int | None]]:
    """(host, port or None when none is given) per server of ``host:port[,host:port][/chroot]``.
    A port is read as ZooKeeper's ConnectStringParser reads it (``Integer.parseInt``, which,
    like kazoo's ``int``, takes any Unicode decimal digits).

    :raises UsageError: a port that is no number or out of range (Java: a NumberFormatException
        or "port out of range" stack trace; kazoo: a ValueError).
    """
    servers = []
    for entry in hosts.partition("/")[0].split(","):
        entry = entry.strip()
        match = _SERVER.fullmatch(entry)
        if not entry or match is None:
            continue
        host = match.group("v6") if match.group("v6") is not None else match.group("host")
        port = match.group("v6port") if match.group("v6") is not None else match.group("port")
        if port is not None and not (port.isdecimal() and 0 <= int(port) <= 65535):
            raise UsageError(f"ZooKeeper port {port!r} in {hosts} is not a port number (0-65535)")
        servers.append((host, int(port) if port is not None else None))
    return servers


def assumed_port_note(hosts: str) -> str:
    """`` (port 2181 assumed: none given for h)`` when a server has no port, else ''."""
    bare = [host for host, port in zk_servers(hosts) if port is None]
    return f" (port {ZK_DEFAULT_PORT} assumed: none given for {', '.join(bare)})" if bare else ""


def check_reachable(hosts: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Return when some server may be reachable; :raises StoreUnavailable: naming why none is
    (cannot resolve, connection refused) and any port assumed."""
    causes = []
    for host, port in zk_servers(hosts):
        address = (host, port or ZK_DEFAULT_PORT)
        try:
            socket.getaddrinfo(*address, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            causes.append(f"cannot resolve {host}")
            continue
        try:
            socket.create_connection(address, timeout=timeout_s).close()
            return
        except ConnectionRefusedError:
            causes.append(f"{_shown(*address)} refused the connection")
        except OSError:
            return  # no answer yet: kazoo waits for its connect timeout
    if causes:
        raise StoreUnavailable(f"Cannot connect to ZooKeeper at {hosts}: {'; '.join(causes)}{assumed_port_note(hosts)}")


def _shown(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
