"""User SCRAM credentials over the admin API (KIP-554, Kafka 2.7+), as kafka-python objects.

Pure: builds DescribeUserScramCredentials (key 50) / AlterUserScramCredentials (key 51)
requests and reads their responses, with kafka-python 3.0.12's own protocol classes (generated
from Kafka's message JSON, version 0 of both). As the Java admin client does, the password
never leaves the client: an upsertion carries a random salt and the salted password
``Hi(password, salt, iterations)`` (PBKDF2-HMAC, RFC 5802); the broker derives the stored and
server keys from it.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

from kafka.protocol.admin import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

from kconfigs.kafka_admin.error_codes import error_for_code
from kconfigs.scram import ScramUpsertion, UserScramDescription

# org.apache.kafka.clients.admin.ScramMechanism: the wire byte per mechanism name.
MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
_MECHANISM_NAMES = {code: name for name, code in MECHANISM_CODES.items()}
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_RESOURCE_NOT_FOUND = 91


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """ScramFormatter.hi: PBKDF2 with the mechanism's HMAC and its digest length."""
    return hashlib.pbkdf2_hmac(_HASHES[mechanism], password.encode("utf-8"), salt, iterations)


def build_describe_scram_request(users: Sequence[str], version: int) -> DescribeUserScramCredentialsRequest:
    """An empty ``users`` asks for every user with credentials (as the Java client sends it)."""
    names = [DescribeUserScramCredentialsRequest.UserName(name=user) for user in users]
    return DescribeUserScramCredentialsRequest(users=names, version=version)


def read_describe_scram_response(response: DescribeUserScramCredentialsResponse) -> list[UserScramDescription]:
    """Users in the broker's order; unknown users (RESOURCE_NOT_FOUND) are left out, as the Java
    client's ``users()`` does. :raises KconfigsError: the response's top-level error."""
    error = error_for_code(response.error_code, response.error_message)
    if error is not None:
        raise error
    described = []
    for result in response.results or ():
        if result.error_code == _RESOURCE_NOT_FOUND:
            continue
        infos = tuple(
            (_MECHANISM_NAMES.get(info.mechanism, "UNKNOWN"), info.iterations) for info in result.credential_infos or ()
        )
        described.append(
            UserScramDescription(result.user, infos, error_for_code(result.error_code, result.error_message))
        )
    return described


def build_alter_scram_request(
    user: str, upsertions: Sequence[ScramUpsertion], deletions: Sequence[str], salt: bytes, version: int
) -> AlterUserScramCredentialsRequest:
    """Deletions then upsertions of one user's credentials, each upsertion salted with ``salt``."""
    request_class = AlterUserScramCredentialsRequest
    return request_class(
        deletions=[request_class.ScramCredentialDeletion(name=user, mechanism=MECHANISM_CODES[m]) for m in deletions],
        upsertions=[
            request_class.ScramCredentialUpsertion(
                name=user,
                mechanism=MECHANISM_CODES[u.mechanism],
                iterations=u.iterations,
                salt=salt,
                salted_password=salted_password(u.mechanism, u.password, salt, u.iterations),
            )
            for u in upsertions
        ],
        version=version,
    )


def read_alter_scram_response(response: AlterUserScramCredentialsResponse) -> None:
    """:raises KconfigsError: the first per-user error (kafka-configs alters one user)."""
    for result in response.results or ():
        error = error_for_code(result.error_code, result.error_message)
        if error is not None:
            raise error
