"""``--command-config`` properties -> connection security settings (pure).

Supported (see docs/command-config.md): security.protocol PLAINTEXT/SSL/SASL_PLAINTEXT/SASL_SSL;
sasl.mechanism PLAIN/SCRAM-SHA-256/SCRAM-SHA-512 with sasl.jaas.config (Plain/ScramLoginModule
username/password); PEM trust and key material, as files or inline; ssl.endpoint.identification.
algorithm; client.id; request.timeout.ms / default.api.timeout.ms. Everything Java would use but
kconfigs cannot (JKS/PKCS12 stores, GSSAPI, OAUTHBEARER, callback handlers) is one clear error,
never a silent downgrade. No message ever contains a password or key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from kconfigs.errors import ValidationError
from kconfigs.kafka_admin.jaas import parse_jaas_config

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# Java's defaults: sasl.mechanism=GSSAPI, ssl.*.type=JKS, hostname verification on ("https").
_DEFAULT_MECHANISM = "GSSAPI"
_DEFAULT_STORE_TYPE = "JKS"
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_UNSUPPORTED_KEYS = {
    "sasl.client.callback.handler.class": "custom SASL callback handlers",
    "sasl.login.callback.handler.class": "custom SASL login callback handlers",
    "sasl.login.class": "custom SASL login classes",
    "ssl.engine.factory.class": "custom SSL engine factories",
}


@dataclass(frozen=True)
class PemMaterial:
    """PEM text for trust (CA certificates) and for the client key pair."""

    ca_pem: str | None = None
    cert_chain_pem: str | None = None
    key_pem: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ClientSecurity:
    """Everything needed to open an authenticated connection. Secrets are excluded from repr."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True
    pem: PemMaterial = field(default_factory=PemMaterial)
    client_id: str | None = None
    request_timeout_ms: int | None = None

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def security_from_properties(props: Mapping[str, str], read_file=None) -> ClientSecurity:
    """Build :class:`ClientSecurity` from admin-client properties.

    ``read_file(path) -> str`` loads PEM files (injected so this stays pure; the adapter passes
    a real reader). :raises ValidationError: unsupported or inconsistent settings.
    """
    for key, what in _UNSUPPORTED_KEYS.items():
        if props.get(key):
            raise ValidationError(f"{key} is not supported by kconfigs ({what}); remove it from --command-config")
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise ValidationError(f"Unsupported security.protocol {protocol}; kconfigs supports {', '.join(PROTOCOLS)}")
    sasl = _sasl_settings(props) if protocol.startswith("SASL_") else {}
    ssl_on = protocol in ("SSL", "SASL_SSL")
    pem = _pem_material(props, read_file) if ssl_on else PemMaterial()
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip()
    return ClientSecurity(
        protocol=protocol,
        check_hostname=algorithm.lower() == "https",
        pem=pem,
        client_id=props.get("client.id") or None,
        request_timeout_ms=_optional_int(props, "default.api.timeout.ms") or _optional_int(props, "request.timeout.ms"),
        **sasl,
    )


def _optional_int(props: Mapping[str, str], key: str) -> int | None:
    """An INT setting as Kafka's ConfigDef reads it (not Python's ``int``, which takes ``1_000``)."""
    from kconfigs.javafmt import parse_java_integer

    raw = props.get(key)
    if raw is None or not raw.strip():
        return None
    try:
        return parse_java_integer(raw, 2**31 - 1)
    except ValueError:
        raise ValidationError(
            f"Invalid value {raw.strip()} for configuration {key}: Not a number of type INT"
        ) from None


def _sasl_settings(props: Mapping[str, str]) -> dict[str, str]:
    mechanism = props.get("sasl.mechanism", _DEFAULT_MECHANISM).strip().upper()
    if mechanism not in MECHANISMS:
        raise ValidationError(
            f"sasl.mechanism {mechanism} is not supported by kconfigs; use one of {', '.join(MECHANISMS)}"
        )
    jaas_text = props.get("sasl.jaas.config")
    if not jaas_text:
        raise ValidationError(
            f"sasl.jaas.config must be set for sasl.mechanism {mechanism} "
            "(kconfigs does not read a JAAS file from java.security.auth.login.config)"
        )
    entry = parse_jaas_config(jaas_text)
    expected = _LOGIN_MODULES[mechanism]
    if entry.login_module != expected:
        raise ValidationError(
            f"sasl.jaas.config login module {entry.login_module} does not match sasl.mechanism {mechanism}; use "
            f"{expected}"
        )
    missing = [name for name in ("username", "password") if name not in entry.options]
    if missing:
        raise ValidationError(f"sasl.jaas.config for {mechanism} must set {' and '.join(missing)}")
    return {
        "sasl_mechanism": mechanism,
        "sasl_username": entry.options["username"],
        "sasl_password": entry.options["password"],
    }


def _store_type(props: Mapping[str, str], prefix: str, has_material: bool) -> str | None:
    declared = props.get(f"{prefix}.type", "").strip().upper()
    if not has_material:
        return None
    store_type = declared or _DEFAULT_STORE_TYPE
    if store_type != "PEM":
        raise ValidationError(
            f"{prefix}.type {store_type} is not supported by kconfigs (JKS and PKCS12 stores cannot be read); "
            f"convert it to PEM and set {prefix}.type=PEM"
        )
    return store_type


def _pem_material(props: Mapping[str, str], read_file) -> PemMaterial:
    trust_file = props.get("ssl.truststore.location", "").strip()
    trust_inline = props.get("ssl.truststore.certificates", "").strip()
    _store_type(props, "ssl.truststore", bool(trust_file or trust_inline))
    ca_pem = trust_inline or (_read_pem(read_file, trust_file, "ssl.truststore.location") if trust_file else None)

    key_file = props.get("ssl.keystore.location", "").strip()
    chain_inline = props.get("ssl.keystore.certificate.chain", "").strip()
    key_inline = props.get("ssl.keystore.key", "").strip()
    _store_type(props, "ssl.keystore", bool(key_file or chain_inline or key_inline))
    if bool(chain_inline) != bool(key_inline):
        raise ValidationError("ssl.keystore.certificate.chain and ssl.keystore.key must be set together")
    if key_file:
        # A PEM keystore file holds the private key and the certificate chain.
        both = _read_pem(read_file, key_file, "ssl.keystore.location")
        chain_inline, key_inline = both, both
    password = props.get("ssl.key.password") or None
    return PemMaterial(
        ca_pem=ca_pem, cert_chain_pem=chain_inline or None, key_pem=key_inline or None, key_password=password
    )


def _read_pem(read_file, path: str, key: str) -> str:
    if read_file is None:
        raise ValidationError(f"{key} cannot be read here")
    try:
        return read_file(path)
    except OSError as err:
        raise ValidationError(f"Cannot read {key} {path}: {err.strerror}") from None
