"""ZooKeeper SASL (DIGEST-MD5) credentials the way Kafka's tools get them: from the JAAS file
named by ``-Djava.security.auth.login.config=...`` in ``KAFKA_OPTS``, section ``Client`` (or the
one ``-Dzookeeper.sasl.clientconfig=...`` names). Pure: callers pass the texts in.

So a script that runs ``KAFKA_OPTS=-Djava.security.auth.login.config=jaas.conf kafka-configs.sh
--zookeeper ...`` keeps working with kconfigs in its place.
"""

from __future__ import annotations

import re

from kconfigs.errors import ValidationError

DIGEST_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"


def _system_property(kafka_opts: str, name: str) -> str | None:
    match = re.search(r"(?:^|\s)-D" + re.escape(name) + r"=(\"[^\"]*\"|\S+)", kafka_opts)
    return match.group(1).strip('"') if match else None


def jaas_file_from_kafka_opts(kafka_opts: str) -> tuple[str, str] | None:
    """(JAAS file path, section name) named in ``KAFKA_OPTS``, or None."""
    path = _system_property(kafka_opts, "java.security.auth.login.config")
    if path is None:
        return None
    return path, _system_property(kafka_opts, "zookeeper.sasl.clientconfig") or "Client"


def digest_credentials(jaas_text: str, section: str, origin: str) -> tuple[str, str]:
    """(username, password) of the DigestLoginModule in ``section`` of a JAAS file.

    :raises ValidationError: no such section, or another login module (e.g. Kerberos), which
        kconfigs does not support; the message never contains the password.
    """
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", jaas_text, flags=re.S)
    match = re.search(r"(?:^|[\s};])" + re.escape(section) + r"\s*\{(.*?)\}\s*;", text, re.S)
    if match is None:
        raise ValidationError(f"{origin}: no '{section}' section for the ZooKeeper client")
    from kconfigs.kafka_admin.jaas import parse_jaas_config  # only when KAFKA_OPTS names a JAAS file

    entry = parse_jaas_config(match.group(1).strip())
    if entry.login_module != DIGEST_MODULE:
        raise ValidationError(
            f"{origin}: ZooKeeper SASL login module {entry.login_module} is not supported "
            f"(kconfigs supports {DIGEST_MODULE}, i.e. DIGEST-MD5)"
        )
    if "username" not in entry.options or "password" not in entry.options:
        raise ValidationError(f"{origin}: the '{section}' section needs username and password")
    return entry.options["username"], entry.options["password"]
