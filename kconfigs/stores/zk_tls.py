"""``--zk-tls-config-file``: Kafka's ``zookeeper.ssl.*`` keys mapped to kazoo's TLS options. Pure.

kazoo takes PEM files, so key/trust stores must be ``type=PEM``; JKS and PKCS12 get one clear
error saying how to convert them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kconfigs.errors import ValidationError

_TRUE = {"true", "yes", "1"}


@dataclass(frozen=True)
class ZkTlsOptions:
    use_ssl: bool
    ca: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    keyfile_password: str | None = None
    verify_certs: bool = True
    check_hostname: bool = True

    def kazoo_kwargs(self) -> dict:
        if not self.use_ssl:
            return {}
        return {
            "use_ssl": True,
            "ca": self.ca,
            "certfile": self.certfile,
            "keyfile": self.keyfile,
            "keyfile_password": self.keyfile_password,
            "verify_certs": self.verify_certs,
            "check_hostname": self.check_hostname,
        }


def tls_options(props: dict[str, str]) -> ZkTlsOptions:
    """Build TLS options from ``zookeeper.ssl.*`` properties (other keys ignored, as Kafka does).

    :raises ValidationError: for store types kazoo cannot read.
    """
    if props.get("zookeeper.ssl.client.enable", "false").strip().lower() not in _TRUE:
        return ZkTlsOptions(use_ssl=False)
    for store in ("keystore", "truststore"):
        location = props.get(f"zookeeper.ssl.{store}.location")
        kind = props.get(f"zookeeper.ssl.{store}.type", "").strip().upper()
        if location and kind != "PEM" and not location.lower().endswith((".pem", ".crt")):
            raise ValidationError(
                f"zookeeper.ssl.{store}.location {location}: only PEM stores are supported "
                f"(set zookeeper.ssl.{store}.type=PEM; convert JKS/PKCS12 with keytool -importkeystore and openssl)"
            )
    keystore = props.get("zookeeper.ssl.keystore.location")
    hostname_check = props.get("zookeeper.ssl.endpoint.identification.algorithm", "HTTPS").strip().upper() == "HTTPS"
    return ZkTlsOptions(
        use_ssl=True,
        ca=props.get("zookeeper.ssl.truststore.location"),
        certfile=keystore,
        keyfile=keystore,  # a PEM keystore holds the private key and the certificate chain
        keyfile_password=props.get("zookeeper.ssl.keystore.password") or None,
        check_hostname=hostname_check,
    )
