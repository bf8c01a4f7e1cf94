"""SSLContext from PEM material (files and inline, folded by properties continuations).

Certificates are generated with the openssl CLI for each run; nothing is mocked: the context
must accept them, and a real TLS handshake (in-memory BIOs, both ends Python's ssl) must verify.
"""

import ssl

import pytest

from harness.tls import generate_pem_material
from kconfigs.errors import ValidationError
from kconfigs.java_properties import parse_properties
from kconfigs.kafka_admin.security import PemMaterial, security_from_properties
from kconfigs.kafka_admin.tls import build_ssl_context


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a server cert for 127.0.0.1 signed by it, and a client key encrypted with 'key-pw'."""
    return generate_pem_material(tmp_path_factory.mktemp("pki"), client_key_password="key-pw")


def handshake(client_ctx, server_ctx, server_hostname="127.0.0.1"):
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=server_hostname)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(20):
        for name, end in (("c", client), ("s", server)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return server.getpeercert()
    raise AssertionError("handshake did not finish")


def server_context(pki, require_client_cert=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki / "server.pem", pki / "server.key")
    if require_client_cert:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(pki / "ca.pem")
    return ctx


def test_pem_truststore_file_verifies_the_broker(pki):
    sec = security_from_properties(
        {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki / "ca.pem")},
        read_file=lambda p: open(p).read(),
    )
    handshake(build_ssl_context(sec.pem, sec.check_hostname), server_context(pki))


def test_hostname_mismatch_fails_unless_identification_is_off(pki):
    pem = PemMaterial(ca_pem=(pki / "ca.pem").read_text())
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(build_ssl_context(pem, True), server_context(pki), server_hostname="other.example")
    handshake(build_ssl_context(pem, False), server_context(pki), server_hostname="other.example")


def test_inline_folded_pem_and_encrypted_client_key_give_mutual_tls(pki):
    def folded(path):  # what a properties value looks like after `\` continuations are joined
        return " ".join(path.read_text().split())

    text = (
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.certificates={folded(pki / 'ca.pem')}\n"
        f"ssl.keystore.type=PEM\nssl.keystore.certificate.chain={folded(pki / 'client.pem')}\n"
        f"ssl.keystore.key={folded(pki / 'client-encrypted.key')}\nssl.key.password=key-pw\n"
    )
    sec = security_from_properties(parse_properties(text))
    peer = handshake(build_ssl_context(sec.pem, sec.check_hostname), server_context(pki, require_client_cert=True))
    assert dict(x[0] for x in peer["subject"])["commonName"] == "kconfigs-client"


def test_wrong_key_password_is_one_clear_error_without_the_password(pki):
    pem = PemMaterial(
        cert_chain_pem=(pki / "client.pem").read_text(),
        key_pem=(pki / "client-encrypted.key").read_text(),
        key_password="not-the-pw",
    )
    with pytest.raises(ValidationError) as err:
        build_ssl_context(pem, True)
    assert str(err.value).startswith("Cannot load the SSL keystore key pair")
    assert "not-the-pw" not in str(err.value)


def test_pem_keystore_file_with_key_and_chain(pki, tmp_path):
    keystore = tmp_path / "keystore.pem"
    keystore.write_text((pki / "client-encrypted.key").read_text() + (pki / "client.pem").read_text())
    sec = security_from_properties(
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki / "ca.pem"),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore),
            "ssl.key.password": "key-pw",
        },
        read_file=lambda p: open(p).read(),
    )
    peer = handshake(build_ssl_context(sec.pem, sec.check_hostname), server_context(pki, require_client_cert=True))
    assert dict(x[0] for x in peer["subject"])["commonName"] == "kconfigs-client"
