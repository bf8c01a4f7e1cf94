"""--command-config -> ClientSecurity: supported settings, and one clear error for the rest."""

import ssl

import pytest

from kconfigs.errors import ValidationError
from kconfigs.java_properties import parse_properties
from kconfigs.kafka_admin.jaas import parse_jaas_config
from kconfigs.kafka_admin.security import security_from_properties
from kconfigs.kafka_admin.tls import build_ssl_context, normalize_pem

SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="s3cr=t;\\"x";'


def test_default_is_plaintext():
    sec = security_from_properties({})
    assert (sec.protocol, sec.uses_sasl, sec.uses_ssl) == ("PLAINTEXT", False, False)


def test_sasl_scram_credentials_from_jaas():
    sec = security_from_properties(
        {"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": SCRAM_JAAS}
    )
    assert (sec.protocol, sec.sasl_mechanism, sec.sasl_username, sec.sasl_password) == (
        "SASL_PLAINTEXT",
        "SCRAM-SHA-512",
        "admin",
        's3cr=t;"x',
    )
    assert "s3cr" not in repr(sec)


def test_plain_needs_plain_login_module():
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": SCRAM_JAAS}
    with pytest.raises(ValidationError, match="does not match sasl.mechanism PLAIN") as err:
        security_from_properties(props)
    assert "s3cr" not in str(err.value)


def test_sasl_without_mechanism_is_gssapi_like_java_and_unsupported():
    with pytest.raises(ValidationError, match="^sasl.mechanism GSSAPI is not supported by kconfigs"):
        security_from_properties({"security.protocol": "SASL_SSL", "sasl.jaas.config": SCRAM_JAAS})


def test_missing_password_is_named_without_values():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u";'
    with pytest.raises(ValidationError, match="must set password$"):
        security_from_properties(
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas}
        )


@pytest.mark.parametrize("store_type", ["", "JKS", "PKCS12"])
def test_non_pem_truststore_is_one_clear_error(store_type):
    props = {
        "security.protocol": "SSL",
        "ssl.truststore.location": "/x/truststore.jks",
        "ssl.truststore.password": "changeit",
    }
    if store_type:
        props["ssl.truststore.type"] = store_type
    with pytest.raises(ValidationError) as err:
        security_from_properties(props, read_file=lambda p: "")
    assert str(err.value) == (
        f"ssl.truststore.type {store_type or 'JKS'} is not supported by kconfigs "
        "(JKS and PKCS12 stores cannot be read); convert it to PEM and set ssl.truststore.type=PEM"
    )
    assert "changeit" not in str(err.value)


def test_unknown_protocol():
    with pytest.raises(ValidationError, match="^Unsupported security.protocol FOO; kconfigs supports"):
        security_from_properties({"security.protocol": "foo"})


def test_pem_truststore_file_and_hostname_check_off():
    sec = security_from_properties(
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": "/ca.pem",
            "ssl.endpoint.identification.algorithm": "",
        },
        read_file=lambda path: f"PEM from {path}",
    )
    assert sec.pem.ca_pem == "PEM from /ca.pem" and sec.check_hostname is False


def test_inline_chain_without_key_is_rejected():
    with pytest.raises(ValidationError, match="must be set together"):
        security_from_properties(
            {
                "security.protocol": "SSL",
                "ssl.keystore.type": "PEM",
                "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----x",
            }
        )


def test_jaas_parser_handles_flags_and_bare_values():
    entry = parse_jaas_config('a.b.C optional k=v  q="x y" ;')
    assert (entry.login_module, entry.flag, entry.options) == ("a.b.C", "optional", {"k": "v", "q": "x y"})
    with pytest.raises(ValidationError):
        parse_jaas_config('a.b.C required k="unterminated;')
    with pytest.raises(ValidationError):
        parse_jaas_config("a.b.C required k=v")  # no ';'


def test_inline_pem_folded_on_one_line_is_rewrapped():
    folded = "-----BEGIN CERTIFICATE----- AAAA BBBB -----END CERTIFICATE-----"
    assert normalize_pem(folded) == "-----BEGIN CERTIFICATE-----\nAAAABBBB\n-----END CERTIFICATE-----\n"
    with pytest.raises(ValidationError):
        normalize_pem("not a pem")


def test_bad_ca_pem_is_one_clear_error():
    from kconfigs.kafka_admin.security import PemMaterial

    with pytest.raises(ValidationError, match="^Cannot load the SSL truststore certificates"):
        build_ssl_context(PemMaterial(ca_pem="-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"), True)
    assert isinstance(build_ssl_context(PemMaterial(), True), ssl.SSLContext)


def test_full_properties_file_round_trip():
    text = (
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '  username="admin" password="admin-secret";\nclient.id=ops\nrequest.timeout.ms=5000\n'
    )
    sec = security_from_properties(parse_properties(text))
    assert (sec.sasl_username, sec.client_id, sec.request_timeout_ms) == ("admin", "ops", 5000)


@pytest.mark.parametrize("value", ["1_000", "\u0665000", "5000\u00a0", "0x10", "1e3"])
def test_a_timeout_is_an_int_as_kafkas_config_def_reads_it(value):
    """Python's int() took ``1_000``, Arabic-Indic digits and Unicode spaces."""
    with pytest.raises(ValidationError, match=r"^Invalid value .* for configuration request.timeout.ms: Not a number"):
        security_from_properties({"request.timeout.ms": value})
    assert security_from_properties({"request.timeout.ms": " +7000\t"}).request_timeout_ms == 7000
