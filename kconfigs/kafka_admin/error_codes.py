"""Kafka protocol error codes -> kconfigs errors (pure).

The broker's own message is kept verbatim when it sent one (KRaft controller texts such as
``Quota producer_byte_rate must be greater than 0``; ZK-backed broker texts such as
``Invalid configuration key foo``), because kafka-configs users know those texts.
"""

from __future__ import annotations

from kconfigs.errors import KconfigsError, StoreUnavailable, ValidationError

NONE = 0
NOT_CONTROLLER = 41

# code -> (kconfigs error class, Kafka exception name, fallback text)
_KNOWN: dict[int, tuple[type[KconfigsError], str, str]] = {
    7: (StoreUnavailable, "RequestTimedOutException", "The request timed out."),
    31: (StoreUnavailable, "ClusterAuthorizationException", "Cluster authorization failed."),
    35: (StoreUnavailable, "UnsupportedVersionException", "The version of API is not supported."),
    40: (ValidationError, "InvalidConfigurationException", "Configuration is invalid."),
    41: (StoreUnavailable, "NotControllerException", "This is not the correct controller for this cluster."),
    42: (ValidationError, "InvalidRequestException", "The request is invalid."),
    58: (StoreUnavailable, "SaslAuthenticationException", "SASL Authentication failed."),
    89: (StoreUnavailable, "ThrottlingQuotaExceededException", "The throttling quota has been exceeded."),
    # AlterUserScramCredentials per-user errors: the broker's text is what kafka-configs shows.
    91: (
        ValidationError,
        "ResourceNotFoundException",
        "A request illegally referred to a resource that does not exist.",
    ),
    92: (ValidationError, "DuplicateResourceException", "A request illegally referred to the same resource twice."),
    93: (
        ValidationError,
        "UnacceptableCredentialException",
        "Requested credential would not meet criteria for acceptability.",
    ),
}
# Retriable per Kafka's RetriableException hierarchy (only those a quota request can get).
_RETRIABLE = {7, 41, 89}


def error_for_code(code: int, message: str | None, context: str = "") -> KconfigsError | None:
    """The kconfigs error for a response error code, or None for code 0.

    ``context`` (e.g. ``"user-principal 'u'"``) prefixes per-entity errors so a multi-entity
    failure names the entity. Messages are one line.
    """
    if code == NONE:
        return None
    cls, name, fallback = _KNOWN.get(code, (StoreUnavailable, _kafka_python_name(code), "Unexpected server error."))
    text = " ".join((message or "").split()) or fallback
    if cls is StoreUnavailable and code not in (7, 41, 89):
        text = f"{name}: {text}"
    prefix = f"{context}: " if context else ""
    error = cls(prefix + text)
    error.retriable = code in _RETRIABLE  # instance attribute: the class default may differ
    error.kafka_error_code = code
    return error


def _kafka_python_name(code: int) -> str:
    import kafka.errors  # lazy: keeps this module importable without kafka-python loaded

    return f"{kafka.errors.for_code(code).__name__}({code})"


def java_exception_name(code: int) -> str:
    """The simple name of Kafka's exception for ``code`` (kafka-configs prints it in some lines)."""
    known = _KNOWN.get(code)
    return known[1] if known else _kafka_python_name(code)
