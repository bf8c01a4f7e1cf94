"""Blocking request/response to a Kafka broker or controller, over kafka-python's net layer.

kafka-python 3.0.12 supplies the hard parts and we use them as they are: ``NetworkSelector``
(an IO thread), ``KafkaConnectionManager`` (bootstrap via Metadata, TCP/TLS, backoff,
least-loaded node choice) and ``KafkaConnection`` (ApiVersions on connect, SaslHandshake +
SaslAuthenticate with its PLAIN/SCRAM mechanisms). kafka-python has no client-quota admin
method, so this module only adds: per-node version negotiation for keys 48/49, node routing
(any broker, or the bootstrap controllers for ``--bootstrap-controller``), and the mapping of
kafka-python exceptions to kconfigs errors (``_mapped_errors``), so no traceback escapes.

Routing follows the Java admin client: with ``--bootstrap-server`` it fetches Metadata and
sends to the least-loaded broker; with ``--bootstrap-controller`` it sends to a bootstrap
controller and moves on to the next one on NOT_CONTROLLER. (Java learns the active controller
from DescribeCluster; rotating over the given controllers reaches it as long as the voters are
listed, which is how ``--bootstrap-controller`` is normally given.)
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Callable

from kconfigs.clock import MONOTONIC
from kconfigs.errors import KconfigsError, StoreUnavailable, UsageError
from kconfigs.kafka_admin.bootstrap_addresses import bootstrap_addresses
from kconfigs.kafka_admin.messages import SUPPORTED_VERSIONS
from kconfigs.kafka_admin.security import ClientSecurity
from kconfigs.kafka_admin.versions import API_NAMES, negotiate_version
from kconfigs.retry import Backoff

_SASL_CLOSES_BEFORE_FAILING = 3
_CONTROLLER_UNSUPPORTED = (
    "{api} is not supported when communicating directly with the controller quorum "
    "(--bootstrap-controller); use --bootstrap-server"
)


def _quiet_kafka_python_logging() -> None:
    """kafka-python logs to the ``kafka`` logger tree. Without a handler, Python's last-resort
    handler would print its warnings on stderr (we promise one line); and its DEBUG request
    dumps include SaslAuthenticate bytes (a PLAIN password), so that logger stays at INFO+."""
    logging.getLogger("kafka").addHandler(logging.NullHandler())
    logging.getLogger("kafka.net.connection").setLevel(logging.INFO)


#: the largest response accepted. The connection manager's own default (1 MB) fails a describe of
#: every client quota from about 18,000 entities on (55 bytes each); Java's admin client reads
#: responses of any size. 100 MB is kafka-python's KafkaAdminClient default: 100,000 entities
#: answer in 5.5 MB.
MAX_RESPONSE_BYTES = 100_000_000


def kafka_python_config(security: ClientSecurity, bootstrap: str, request_timeout_ms: int) -> dict[str, Any]:
    """KafkaConnectionManager settings for ``security`` (SSL context built from PEM here)."""
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "client_id": security.client_id or "kconfigs",
        "client_software_name": "kconfigs",
        "request_timeout_ms": request_timeout_ms,
        "socket_connection_setup_timeout_ms": min(request_timeout_ms, 10000),
        "security_protocol": security.protocol,
        "receive_message_max_bytes": MAX_RESPONSE_BYTES,
    }
    if security.uses_sasl:
        config.update(
            sasl_mechanism=security.sasl_mechanism,
            sasl_plain_username=security.sasl_username,
            sasl_plain_password=security.sasl_password,
        )
    if security.uses_ssl:
        from kconfigs.kafka_admin.tls import build_ssl_context

        config.update(
            ssl_context=build_ssl_context(security.pem, security.check_hostname),
            ssl_check_hostname=security.check_hostname,
        )
    return config


class AdminClient:
    """Sends one request at a time and returns the decoded response (kafka-python objects).

    :raises StoreUnavailable: unreachable, authentication failure, unsupported API.
    """

    def __init__(self, bootstrap: str, security: ClientSecurity, *, controller: bool, request_timeout_ms: int):
        from kafka.net.manager import KafkaConnectionManager
        from kafka.net.selector import NetworkSelector

        _quiet_kafka_python_logging()
        bootstrap_addresses(bootstrap, resolves)  # fail at once on "notaport", as Java does
        self.bootstrap = bootstrap
        self.controller = controller
        self.request_timeout_ms = request_timeout_ms
        config = kafka_python_config(security, bootstrap, request_timeout_ms)
        with _mapped_errors(bootstrap):
            self._net = NetworkSelector(client_id=config["client_id"])
            self._manager = KafkaConnectionManager(self._net, **config)
        self._net.start()
        self._bootstrapped = False
        self._controller_index = 0
        self._sasl = security.uses_sasl
        #: set once every bootstrap address has refused the connection
        self._refused: StoreUnavailable | None = None

    def send(self, api_key: int, build_request: Callable[[int], Any]) -> Any:
        """Negotiate the version with the chosen node, send ``build_request(version)``, await it."""
        with _mapped_errors(self.bootstrap):
            node_id = self._choose_node()
            return self._manager.run(self._send_to, node_id, api_key, build_request)

    def api_versions(self, timeout_ms: int) -> dict[int, tuple[int, int]]:
        """The ApiVersions ranges a node of the cluster answered when we connected to it.

        :raises StoreUnavailable: no node answered within ``timeout_ms``."""
        with _mapped_errors(self.bootstrap):
            return self._manager.run(self._api_versions, min(timeout_ms, self.request_timeout_ms))

    async def _api_versions(self, timeout_ms: int) -> dict[int, tuple[int, int]]:
        node_id = await self._first_connection(timeout_ms)
        conn = self._manager.get_connection(node_id, timeout_ms=timeout_ms)
        await self._manager.wait_for(conn.init_future, timeout_ms)
        return dict(conn.broker_version_data.api_versions)

    def rotate_controller(self) -> None:
        """After NOT_CONTROLLER: try the next bootstrap controller (broker mode: refresh metadata)."""
        if self.controller:
            self._controller_index += 1
        else:
            self._manager.cluster.request_update()

    def _choose_node(self):
        if self.controller:
            nodes = self._manager.cluster.bootstrap_brokers()
            return nodes[self._controller_index % len(nodes)].node_id
        if not self._bootstrapped:
            # Connect (ApiVersions + SASL) ourselves first: kafka-python's bootstrap retries an
            # authentication failure until its timeout; this surfaces it at once.
            self._manager.run(self._first_connection)
            self._manager.bootstrap(self.request_timeout_ms)
            self._bootstrapped = True
        node_id = self._manager.least_loaded_node()
        if node_id is None:
            raise StoreUnavailable(f"No Kafka broker of {self.bootstrap} is reachable right now")
        return node_id

    async def _first_connection(self, timeout_ms: int | None = None):
        """Connect to a bootstrap node, retrying connection errors until the request timeout.

        :raises SaslAuthenticationFailedError etc.: immediately (not retriable).
        """
        import kafka.errors as kerr

        # kafka-python's reconnect delay for the node, at least 50 ms, never past the deadline
        backoff = Backoff(timeout_ms or self.request_timeout_ms, base_delay_ms=50, max_delay_ms=50, jitter=False)
        if self._refused is not None:  # a second request (the line probe, then the command) fails alike
            raise self._refused
        nodes = self._manager.cluster.bootstrap_brokers()
        attempt = closed_during_sasl = 0
        refusals = _Refusals(MONOTONIC.now_ms())
        while True:
            node_id = nodes[attempt % len(nodes)].node_id
            attempt += 1
            remaining_ms = backoff.remaining_ms()
            conn = None
            try:
                conn = self._manager.get_connection(node_id, timeout_ms=max(remaining_ms, 1))
                await self._manager.wait_for(conn.init_future, max(remaining_ms, 1))
                return node_id
            except (kerr.SaslAuthenticationFailedError, kerr.UnsupportedSaslMechanismError, kerr.AuthorizationError):
                raise
            except kerr.KafkaError as err:
                if refusals.all_refused(err, MONOTONIC.now_ms()):
                    refused = StoreUnavailable(
                        f"Cannot reach Kafka at {self.bootstrap}: connection refused "
                        "(nothing listens there: is the port right, is Kafka running?)"
                    )
                    refused.retriable = False  # the retries would refuse alike for 30 s
                    self._refused = refused
                    raise refused from None
                # A broker rejecting SASL credentials answers and closes the socket at once;
                # kafka-python 3.0.12 often reports only the close. ApiVersions had succeeded
                # (broker_version_data is set), so the close happened during authentication.
                if self._sasl and conn is not None and conn.broker_version_data is not None:
                    closed_during_sasl += 1
                    if closed_during_sasl >= _SASL_CLOSES_BEFORE_FAILING:
                        raise kerr.SaslAuthenticationFailedError(
                            "the broker closed the connection during SASL authentication "
                            "(check the username, password and sasl.mechanism)"
                        ) from None
                if backoff.expired():
                    raise kerr.KafkaTimeoutError() from None
                await self._net.sleep(backoff.next_delay_ms(self._manager.connection_delay(node_id) * 1000) / 1000)

    async def _send_to(self, node_id, api_key: int, build_request: Callable[[int], Any]) -> Any:
        import kafka.errors as kerr

        conn = self._manager.get_connection(node_id, timeout_ms=self.request_timeout_ms)
        await self._manager.wait_for(conn.init_future, self.request_timeout_ms)
        offered = conn.broker_version_data.api_versions
        if self.controller and api_key not in offered:
            raise UsageError(_CONTROLLER_UNSUPPORTED.format(api=API_NAMES.get(api_key, api_key)))
        version = negotiate_version(api_key, SUPPORTED_VERSIONS[api_key], offered)
        request = build_request(version)
        try:
            return await self._manager.wait_for(conn.send_request(request), self.request_timeout_ms)
        except (kerr.KafkaTimeoutError, kerr.RequestTimedOutError):
            # Retriable: the retry loop re-sends (set/remove ops are idempotent).
            raise StoreUnavailable(
                f"{API_NAMES.get(api_key, api_key)} request to node {node_id} of "
                f"{self.bootstrap} timed out after {self.request_timeout_ms} ms"
            ) from None

    def close(self) -> None:
        # Closing must not mask the error being reported; the IO thread is stopped even when
        # closing the connections failed (else it would outlive the client), and the selector is
        # closed after it (stopping alone keeps its epoll descriptor and wake-up socket pair open).
        with contextlib.suppress(Exception):
            self._manager.close()
        with contextlib.suppress(Exception):
            self._net.stop(timeout_ms=2000)
        with contextlib.suppress(Exception):
            self._net.close()


@contextlib.contextmanager
def _mapped_errors(bootstrap: str):
    """The one place kafka-python exceptions become kconfigs errors (one line, no secrets)."""
    import kafka.errors as kerr

    try:
        yield
    except KconfigsError:
        raise
    except (kerr.SaslAuthenticationFailedError, kerr.UnsupportedSaslMechanismError) as err:
        error = StoreUnavailable(f"Authentication to {bootstrap} failed: {_one_line(err)}")
        error.retriable = False
        raise error from None
    except kerr.AuthorizationError as err:
        error = StoreUnavailable(f"Not authorized on {bootstrap}: {_one_line(err)}")
        error.retriable = False
        raise error from None
    except kerr.KafkaTimeoutError:
        raise StoreUnavailable(f"Timed out connecting to Kafka at {bootstrap}") from None
    except (kerr.KafkaError, OSError) as err:
        raise StoreUnavailable(f"Cannot reach Kafka at {bootstrap}: {_one_line(err)}") from None


#: how long every bootstrap address may refuse connections before the command gives up: a
#: broker that is restarting listens again within this; a wrong port never will
REFUSED_GIVE_UP_MS = 500


class _Refusals:
    """Whether connecting has met only refusals (ECONNREFUSED) for REFUSED_GIVE_UP_MS: then the
    request timeout (30 s) would be spent waiting for nothing. A node waiting to reconnect
    (NodeNotReadyError) is neutral: kafka-python's own bootstrap, which backs off after its
    refusals, may keep a node in that state longer than the give-up time."""

    def __init__(self, start_ms: float):
        self._start_ms = start_ms
        self._refused = self._other_error = False

    def all_refused(self, err: Exception, now_ms: float) -> bool:
        import kafka.errors as kerr

        if "ECONNREFUSED" in str(err) or "Connection refused" in str(err):
            self._refused = True
        elif not isinstance(err, kerr.NodeNotReadyError):
            self._other_error = True
        return self._refused and not self._other_error and now_ms - self._start_ms >= REFUSED_GIVE_UP_MS


def resolves(host: str) -> bool:
    """``new InetSocketAddress(host, port).isUnresolved()`` negated ("" is the loopback)."""
    import socket

    if not host:
        return True
    try:
        socket.getaddrinfo(host, None)
        return True
    except (socket.gaierror, UnicodeError, ValueError):
        return False


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__
