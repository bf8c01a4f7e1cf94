"""Parse a ``sasl.jaas.config`` value (pure).

The JAAS configuration grammar (javax.security.auth.login.ConfigFile, as Kafka's JaasConfig uses
it for the inline property): ``<LoginModuleClass> <flag> [key=value ...];`` where a value is a
double-quoted string or a bare token. Only one login module is allowed in the property.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kconfigs.errors import ValidationError

_FLAGS = ("required", "requisite", "sufficient", "optional")
# A token: a double-quoted string (backslash escapes allowed), '=', ';', or a bare word.
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|(=)|(;)|([^\s=;"]+))', re.S)


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str] = field(repr=False)  # may hold a password: never printed


def parse_jaas_config(text: str) -> JaasEntry:
    """Parse one login module entry. :raises ValidationError: (the message never echoes values)."""
    tokens = _tokenize(text)
    if len(tokens) < 3 or tokens[-1] != (";", "sym"):
        raise ValidationError("sasl.jaas.config must be '<LoginModule> <flag> key=\"value\" ... ;'")
    (module, module_kind), (flag, flag_kind) = tokens[0], tokens[1]
    if module_kind != "word" or flag_kind != "word" or flag.lower() not in _FLAGS:
        raise ValidationError("sasl.jaas.config must start with a login module class and a control flag")
    options: dict[str, str] = {}
    body = tokens[2:-1]
    if len(body) % 3:
        raise ValidationError("sasl.jaas.config options must be key=value pairs")
    for index in range(0, len(body), 3):
        (key, key_kind), (equals, _), (value, value_kind) = body[index : index + 3]
        if key_kind != "word" or equals != "=" or value_kind not in ("word", "quoted"):
            raise ValidationError("sasl.jaas.config options must be key=value pairs")
        options[key] = value
    return JaasEntry(login_module=module, flag=flag.lower(), options=options)


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    stripped_end = len(text.rstrip())
    while position < stripped_end:
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ValidationError("sasl.jaas.config has an unterminated quoted value")
        quoted, equals, semicolon, word = match.groups()
        if quoted is not None:
            tokens.append((re.sub(r"\\(.)", r"\1", quoted), "quoted"))
        elif equals:
            tokens.append(("=", "sym"))
        elif semicolon:
            tokens.append((";", "sym"))
        else:
            tokens.append((word, "word"))
        position = match.end()
    return tokens
