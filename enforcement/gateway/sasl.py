"""Which principal a SASL exchange authenticates, observed in passthrough.

The broker does the authentication; the gateway only reads the client's identity from the
client's messages and commits it when the broker says the exchange succeeded (like
Kroxylicious' SaslInspection). PLAIN: ``authzid NUL authcid NUL password`` -> authcid (Kafka's
PlainSaslServer uses authcid; an authzid must equal it). SCRAM (RFC 5802): client-first message
``gs2-header,n=<saslname>,r=<nonce>`` -> saslname with ``=2C`` -> ``,`` and ``=3D`` -> ``=``;
success is the broker's answer to the client-final message (the second SaslAuthenticate).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ANONYMOUS = "ANONYMOUS"
#: SaslAuthenticate round trips that complete each mechanism's exchange.
_ROUND_TRIPS = {"PLAIN": 1, "SCRAM-SHA-256": 2, "SCRAM-SHA-512": 2}


class UnsupportedSasl(ValueError):
    """A SASL flow the gateway cannot observe (v0 raw-token handshake, unknown mechanism)."""


def plain_authcid(auth_bytes: bytes) -> str:
    """The authentication identity of a PLAIN initial response. :raises UnsupportedSasl:"""
    parts = auth_bytes.split(b"\x00")
    if len(parts) != 3 or not parts[1]:
        raise UnsupportedSasl("malformed SASL/PLAIN message")
    return parts[1].decode("utf-8", errors="replace")


def scram_username(client_first: bytes) -> str:
    """The user name of a SCRAM client-first message. :raises UnsupportedSasl:"""
    text = client_first.decode("utf-8", errors="replace")
    # gs2-header is "n,," / "y,," / "n,a=authzid," -- the bare message starts after the 2nd comma
    pieces = text.split(",", 2)
    if len(pieces) != 3:
        raise UnsupportedSasl("malformed SCRAM client-first message")
    for attribute in pieces[2].split(","):
        if attribute.startswith("n="):
            return attribute[2:].replace("=2C", ",").replace("=3D", "=")
    raise UnsupportedSasl("SCRAM client-first message has no user name")


@dataclass
class SaslState:
    """Per-connection SASL observation. ``principal`` changes only on a successful exchange,
    so a KIP-368 re-authentication keeps the old principal until it succeeds."""

    principal: str = ANONYMOUS
    authenticated: bool = False
    mechanism: str | None = None
    _pending_user: str | None = None
    _round_trips_seen: int = field(default=0)

    def on_handshake_request(self, mechanism: str, version: int) -> None:
        """:raises UnsupportedSasl: for handshake v0 (raw token frames without Kafka headers)."""
        if version == 0:
            raise UnsupportedSasl(
                "SaslHandshake v0 (raw SASL tokens) is not supported; use a client that sends SaslAuthenticate"
            )
        self.mechanism = mechanism
        self._pending_user = None
        self._round_trips_seen = 0

    def on_handshake_response(self, error_code: int) -> None:
        if error_code != 0:
            self.mechanism = None

    def on_authenticate_request(self, auth_bytes: bytes) -> None:
        """Read the identity from the first message of the exchange."""
        if self._round_trips_seen == 0 and self.mechanism is not None:
            if self.mechanism == "PLAIN":
                self._pending_user = plain_authcid(auth_bytes)
            elif self.mechanism in _ROUND_TRIPS:
                self._pending_user = scram_username(auth_bytes)
            else:
                self._pending_user = None  # e.g. OAUTHBEARER: authenticated but user unknown

    def on_authenticate_response(self, error_code: int) -> bool:
        """Record one round trip; True when the exchange just completed successfully."""
        if error_code != 0:
            self._pending_user, self._round_trips_seen = None, 0
            return False
        self._round_trips_seen += 1
        if self._round_trips_seen < _ROUND_TRIPS.get(self.mechanism or "", 1):
            return False
        if self._pending_user is not None:
            self.principal = self._pending_user
        self.authenticated = True
        self._round_trips_seen = 0
        return True
