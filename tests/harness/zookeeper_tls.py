"""ZooKeeper with a TLS client port (mutual TLS) and digest authentication.

Digest auth comes in both ZooKeeper forms: the built-in ``digest`` ACL scheme (kazoo
``auth_data=[("digest", "user:password")]``) and SASL DIGEST-MD5 for Java clients (a JAAS
``Server`` section with the same user; ``jaas_client_path`` is the matching client file).
"""

from __future__ import annotations

from pathlib import Path

from .processes import LOCALHOST, free_ports
from .tls import TlsMaterial
from .zookeeper import ZooKeeperServer

DIGEST_USER = "kconfigs"
DIGEST_PASSWORD = "kconfigs-secret"


class ZooKeeperTlsServer(ZooKeeperServer):
    """Attributes: ``hosts`` (TLS port), ``plain_hosts`` (plaintext port, same data), ``tls``
    (TlsMaterial: ``ca_pem``, ``client_cert_pem``, ``client_key_pem``, ``truststore_jks``,
    ``client_keystore_jks``, ``password``...), ``digest_user``/``digest_password``,
    ``jaas_client_path``, ``kafka_tls_config_path`` (a ``--zk-tls-config-file`` for Kafka's
    ZooKeeper client, JKS stores); ``kazoo()`` returns a TLS client with the client certificate."""

    def __init__(self, workdir: Path, tls: TlsMaterial) -> None:
        super().__init__(workdir, name="zookeeper (tls)")
        self.tls = tls
        self.secure_port = 0
        self.digest_user = DIGEST_USER
        self.digest_password = DIGEST_PASSWORD
        self.jaas_server_path = self.workdir / "jaas-server.conf"
        self.jaas_client_path = self.workdir / "jaas-client.conf"
        self.kafka_tls_config_path = self.workdir / "kafka-zk-tls.properties"

    @property
    def hosts(self) -> str:
        return f"{LOCALHOST}:{self.secure_port}"

    @property
    def plain_hosts(self) -> str:
        return f"{LOCALHOST}:{self.port}"

    def choose_ports(self) -> None:
        self.port, self.secure_port = free_ports(2)

    def config_lines(self) -> list[str]:
        return [
            *super().config_lines(),
            f"secureClientPort={self.secure_port}",
            f"secureClientPortAddress={LOCALHOST}",
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
            f"ssl.keyStore.location={self.tls.server_keystore_pem}",
            "ssl.keyStore.type=PEM",
            f"ssl.trustStore.location={self.tls.ca_pem}",
            "ssl.trustStore.type=PEM",
            "ssl.clientAuth=need",
            "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider",
            "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
        ]

    def jvm_flags(self) -> list[str]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.jaas_server_path.write_text(
            "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
            f'  user_{self.digest_user}="{self.digest_password}";\n}};\n'
        )
        self.jaas_client_path.write_text(
            "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
            f'  username="{self.digest_user}" password="{self.digest_password}";\n}};\n'
        )
        self.kafka_tls_config_path.write_text(
            "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"
            "zookeeper.ssl.client.enable=true\n"
            f"zookeeper.ssl.keystore.location={self.tls.client_keystore_jks}\n"
            f"zookeeper.ssl.keystore.password={self.tls.password}\n"
            f"zookeeper.ssl.truststore.location={self.tls.truststore_jks}\n"
            f"zookeeper.ssl.truststore.password={self.tls.password}\n"
        )
        return [*super().jvm_flags(), f"-Djava.security.auth.login.config={self.jaas_server_path}"]

    def kazoo(self, chroot: str = "", **kwargs):
        """A started KazooClient over TLS (client certificate, CA-verified)."""
        tls_options = {
            "use_ssl": True,
            "verify_certs": True,
            "ca": str(self.tls.ca_pem),
            "certfile": str(self.tls.client_cert_pem),
            "keyfile": str(self.tls.client_key_pem),
        }
        return super().kazoo(chroot, **{**tls_options, **kwargs})

    @property
    def digest_auth(self) -> tuple[str, str]:
        """kazoo ``auth_data`` entry for the digest scheme."""
        return ("digest", f"{self.digest_user}:{self.digest_password}")
