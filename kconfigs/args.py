"""kafka-configs.sh's argv grammar (joptsimple semantics) and ``checkArgs``, for compat mode.

Click cannot express it: kafka-configs pairs ``--entity-type``/``--entity-name`` by the order in
which they appear and accepts single-dash long options (but no abbreviations: its parser
is built with allowAbbreviations=false). So this module reads the raw argv tokens. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from kconfigs.errors import UsageError
from kconfigs.kafka_texts import TEXTS, Dialect, KafkaTexts


@dataclass(frozen=True)
class OptionSpec:
    name: str
    takes_arg: bool
    help: str
    kconfigs_only: bool = False  # our extensions, absent from kafka-configs.sh


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "add-config",
        True,
        "Key Value pairs of configs to add, e.g. 'producer_byte_rate=1024,consumer_byte_rate=2048'. Square "
        "brackets group values containing commas.",
    ),
    OptionSpec("add-config-file", True, "Path to a properties file with configs to add."),
    OptionSpec(
        "all", False, "List all configs for the given topic, broker, or broker-logger entity (not used for quotas)."
    ),
    OptionSpec("alter", False, "Alter the configuration for the entity."),
    OptionSpec("bootstrap-controller", True, "The Kafka controllers to connect to (KRaft)."),
    OptionSpec("bootstrap-server", True, "The Kafka server to connect to."),
    OptionSpec("broker", True, "The broker's ID."),
    OptionSpec("broker-defaults", False, "The config defaults for all brokers."),
    OptionSpec("broker-logger", True, "The broker's ID for its logger config."),
    OptionSpec("client", True, "The client's ID."),
    OptionSpec("client-defaults", False, "The config defaults for all clients."),
    OptionSpec("command-config", True, "Property file containing configs to be passed to Admin Client."),
    OptionSpec("delete-config", True, "Config keys to remove 'k1,k2'."),
    OptionSpec("describe", False, "List configs for the given entity."),
    OptionSpec("dry-run", False, "Validate the change without applying it.", kconfigs_only=True),
    OptionSpec(
        "entity-default",
        False,
        "Default entity name for clients/users/brokers/ips (applies to corresponding entity type in command line).",
    ),
    OptionSpec("entity-name", True, "Name of entity (topic name/client id/user principal name/broker id/ip)."),
    OptionSpec("entity-type", True, "Type of entity (topics/clients/users/brokers/broker-loggers/ips)."),
    OptionSpec("force", False, "Suppress console prompts (kafka-configs 2.x/3.x)."),
    OptionSpec("group", True, "The group's ID (kafka-configs 4.x; not a quota entity)."),
    OptionSpec("client-metrics", True, "The client metrics resource name (kafka-configs 4.x; not a quota entity)."),
    OptionSpec("help", False, "Print usage information."),
    OptionSpec("ip", True, "The IP address."),
    OptionSpec("ip-defaults", False, "The config defaults for all IPs."),
    OptionSpec(
        "profile",
        True,
        "Named connection profile from $XDG_CONFIG_HOME/kconfigs/config.toml (or env KCONFIGS_PROFILE).",
        kconfigs_only=True,
    ),
    OptionSpec(
        "kafka-version",
        True,
        "With --bootstrap-server: print the texts of this kafka-configs line (3.x, 4.0-4.3, 4.4+) instead of the "
        "cluster's own.",
        kconfigs_only=True,
    ),
    OptionSpec(
        "resolve-hostnames",
        False,
        "Accept DNS-resolvable host names as ip entities (as Kafka does).",
        kconfigs_only=True,
    ),
    OptionSpec(
        "store",
        True,
        "Path of the embedded quota store (default: $KCONFIGS_HOME or the XDG data dir).",
        kconfigs_only=True,
    ),
    OptionSpec("topic", True, "The topic's name."),
    OptionSpec("user", True, "The user's principal name."),
    OptionSpec("user-defaults", False, "The config defaults for all users."),
    OptionSpec("version", False, "Display Kafka version."),
    OptionSpec(
        "zk-auth", True, "ZooKeeper digest credentials 'user:password' (or env KCONFIGS_ZK_AUTH).", kconfigs_only=True
    ),
    OptionSpec(
        "zk-tls-config-file",
        True,
        "Identifies the file where ZooKeeper client TLS connectivity properties are defined.",
    ),
    OptionSpec(
        "zookeeper", True, "DEPRECATED. The connection string for the zookeeper connection in the form host:port."
    ),
)
_BY_NAME = {o.name: o for o in OPTIONS}

# (flag, entity type) in kafka-configs' fixed order (ConfigCommandOptions.entityFlags).
ENTITY_FLAGS = (
    ("topic", "topics"),
    ("client", "clients"),
    ("user", "users"),
    ("broker", "brokers"),
    ("broker-logger", "broker-loggers"),
    ("ip", "ips"),
    ("client-metrics", "client-metrics"),
    ("group", "groups"),
)
DEFAULTS_FLAGS = (
    ("client-defaults", "clients"),
    ("user-defaults", "users"),
    ("broker-defaults", "brokers"),
    ("ip-defaults", "ips"),
)
# Options only some kafka-configs lines know (``KafkaTexts.line_options`` says which).
LINE_SPECIFIC_OPTIONS = frozenset({"force", "zk-tls-config-file", "group", "client-metrics"})
ZK_ENTITY_TYPES = ("topics", "clients", "users", "brokers", "ips")
# Valid with --bootstrap-server in every 3.x/4.x line; any other type needs the line's own list.
BOOTSTRAP_ENTITY_TYPES = ZK_ENTITY_TYPES + ("broker-loggers", "client-metrics")
TextsSource = Callable[[], KafkaTexts]  # called only when a version-dependent text is needed


@dataclass
class ParsedOptions:
    """Options in command-line order: ``(name, value or None)``; ``rest`` = non-option args."""

    occurrences: list[tuple[str, str | None]] = field(default_factory=list)
    rest: list[str] = field(default_factory=list)
    #: options whose first occurrence was spelt with one dash (``-force``)
    single_dash: set[str] = field(default_factory=set)
    #: joptsimple's refusal of the first unknown token, held back because an option that only
    #: some Kafka lines know came before it (``check_recognized`` decides which to report)
    refused: str | None = None

    def has(self, name: str) -> bool:
        return any(n == name for n, _ in self.occurrences)

    def values(self, name: str) -> list[str]:
        return [v for n, v in self.occurrences if n == name and v is not None]

    def value(self, name: str) -> str | None:
        """joptsimple ``valueOf``: at most one value. :raises UsageError:"""
        found = self.values(name)
        if len(found) > 1:
            raise UsageError(f"Found multiple arguments for option {name}, but you asked for only one")
        return found[0] if found else None


def is_option_token(token: str) -> bool:
    """``--describe``, ``-describe``, ``--entity-type=users``: a kafka-configs option."""
    return token.startswith("-") and _option_name(token) in _BY_NAME


def _match_option(token: str) -> OptionSpec:
    """Exact long name only: ConfigCommand builds ``new OptionParser(false)``, which turns
    joptsimple's abbreviations off (checked against 2.8.2: ``--entity-t`` is rejected). A
    single-dash word that is no option is read as a cluster of one-letter options, and
    kafka-configs has none, so joptsimple names its first letter (``-bogus``: ``b``).
    :raises UsageError:"""
    name = _option_name(token)
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise UsageError(f"{name if token.startswith('--') else token[1:2]} is not a recognized option")


def _option_name(token: str) -> str:
    """``--entity-type=users`` -> ``entity-type``; ``-describe`` -> ``describe``."""
    return (token[2:] if token.startswith("--") else token[1:]).partition("=")[0]


def parse_argv(argv: list[str]) -> ParsedOptions:
    """Tokenise like joptsimple: ``--opt v``, ``--opt=v``, ``-opt v``; a required argument takes
    the next token whatever it looks like. Options of every Kafka line are read; which ones the
    line at hand knows is ``check_recognized``'s business. :raises UsageError: an unknown
    option (held back in ``refused`` when a line-specific option came first)."""
    parsed = ParsedOptions()
    _check_utf8(argv)
    tokens = iter(argv)
    for token in tokens:
        if token == "--":
            parsed.rest.extend(tokens)
            break
        try:
            _read_token(parsed, token, tokens)
        except UsageError as refusal:
            if not any(name in LINE_SPECIFIC_OPTIONS for name, _ in parsed.occurrences):
                raise
            parsed.refused = str(refusal)  # joptsimple stops here, unless the line refuses earlier
            break
    return parsed


def _read_token(parsed: ParsedOptions, token: str, tokens) -> None:
    """One argv token into ``parsed`` (a required argument takes the next token). :raises UsageError:"""
    if not token.startswith("-") or token == "-":
        parsed.rest.append(token)
        return
    _, eq, inline = token.partition("=")
    spec = _match_option(token)
    if not token.startswith("--") and not parsed.has(spec.name):
        parsed.single_dash.add(spec.name)
    if not spec.takes_arg:  # joptsimple ignores "=value" on a flag (--describe=x runs)
        parsed.occurrences.append((spec.name, None))
        return
    value = inline if eq else next(tokens, None)
    if value is None:
        raise UsageError(f"Option {spec.name} requires an argument")
    parsed.occurrences.append((spec.name, value))


def _check_utf8(argv: list[str]) -> None:
    """Python hands undecodable argv bytes over as lone surrogates, which no store can encode;
    refuse them up front rather than fail half-way. :raises UsageError:"""
    for token in argv:
        try:
            token.encode("utf-8")
        except UnicodeEncodeError:
            shown = token.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise UsageError(f"Argument is not valid UTF-8: {shown}") from None


def entity_types(opts: ParsedOptions) -> list[str]:
    """``--entity-type`` values in order, then shorthand flags, then ``--*-defaults`` flags."""
    return (
        opts.values("entity-type")
        + [t for flag, t in ENTITY_FLAGS if opts.has(flag)]
        + [t for flag, t in DEFAULTS_FLAGS if opts.has(flag)]
    )


def entity_names(opts: ParsedOptions) -> list[str]:
    """``--entity-name`` / ``--entity-default`` ("") in order, then shorthand values, then ""
    for each ``--*-defaults`` flag. :raises UsageError: for a repeated shorthand flag."""
    names = [v if n == "entity-name" else "" for n, v in opts.occurrences if n in ("entity-name", "entity-default")]
    names += [opts.value(flag) or "" for flag, _ in ENTITY_FLAGS if opts.has(flag)]
    names += ["" for flag, _ in DEFAULTS_FLAGS if opts.has(flag)]
    return names


def connect_mode(opts: ParsedOptions) -> str:
    """ "zookeeper", "bootstrap" or "embedded" (kconfigs' default store when no server is named)."""
    if opts.has("zookeeper"):
        return "zookeeper"
    if opts.has("bootstrap-server") or opts.has("bootstrap-controller"):
        return "bootstrap"
    return "embedded"


def default_texts(opts: ParsedOptions) -> KafkaTexts:
    """2.8 texts for ZooKeeper and the embedded store, 3.x texts for a server not asked."""
    return TEXTS[Dialect.KAFKA_3 if connect_mode(opts) == "bootstrap" else Dialect.KAFKA_2_8]


def check_args(
    opts: ParsedOptions,
    is_valid_ip: Callable[[str], bool],
    texts: TextsSource | None = None,
    ip_refusal_hint: Callable[[str], str] = lambda name: "",
) -> None:
    """kafka-configs ``checkArgs()`` (2.8.2 in ZooKeeper mode, 3.x/4.x over a server), in its
    order and with its messages; ``texts`` gives the line's texts, asked only when they matter.

    Differences, all deliberate: with no ``--zookeeper``/``--bootstrap-server`` kconfigs uses its
    embedded store instead of failing; ip names are checked by ``is_valid_ip``, and a refused
    one gets ``ip_refusal_hint(name)`` after Kafka's text (where Kafka would have taken it).
    :raises UsageError:
    """
    texts = texts or (lambda: default_texts(opts))
    check_recognized(opts, texts)
    _check_actions(opts)
    types = entity_types(opts)
    _check_types(opts, types, texts)
    _check_connect_options(opts)
    names = entity_names(opts)
    _check_server_options(opts, texts)
    _refuse_non_quota_types(types)
    _check_ip_names(opts, types, names, is_valid_ip, texts, ip_refusal_hint)
    if opts.has("alter"):
        _check_alter(opts, types, names, texts)


def check_recognized(opts: ParsedOptions, texts: TextsSource) -> None:
    """joptsimple's parse-time refusal, for the line at hand: the first option, in command-line
    order, that this line does not know (``--force`` on 4.x, ``--group`` before 4.0), else the
    unknown token ``parse_argv`` held back. A single-dash word that is not one of the line's
    options is read as a cluster of one-letter options: its first letter is named.
    :raises UsageError:"""
    if connect_mode(opts) != "bootstrap":
        texts = lambda: TEXTS[Dialect.KAFKA_2_8]  # noqa: E731 (ZooKeeper mode speaks 2.8, no cluster asked)
    for name, _ in opts.occurrences:
        if name in LINE_SPECIFIC_OPTIONS and name not in texts().line_options:
            raise UsageError(f"{name[0] if name in opts.single_dash else name} is not a recognized option")
    if opts.refused is not None:
        raise UsageError(opts.refused)


def _check_actions(opts: ParsedOptions) -> None:
    if sum(opts.has(a) for a in ("alter", "describe")) != 1:
        raise UsageError("Command must include exactly one action: --describe, --alter", show_usage=True)
    for used, invalid in (("alter", ("describe",)), ("describe", ("alter", "add-config", "delete-config"))):
        for other in invalid:
            if opts.has(used) and opts.has(other):
                raise UsageError(f'Option "[{used}]" can\'t be used with option "[{other}]"', show_usage=True)


def _check_types(opts: ParsedOptions, types: list[str], texts: TextsSource) -> None:
    duplicates = [t for i, t in enumerate(types) if t in types[:i]]  # Scala's types.diff(types.distinct)
    if duplicates:
        listed = dict.fromkeys(duplicates) if texts().java_tool else duplicates
        raise UsageError(f"Duplicate entity type(s) specified: {','.join(listed)}")
    bootstrap = connect_mode(opts) == "bootstrap"
    for t in types:
        if t not in (BOOTSTRAP_ENTITY_TYPES if bootstrap else ZK_ENTITY_TYPES) and t not in texts().entity_types:
            raise UsageError(texts().invalid_entity_type(t))
    if not types:
        raise UsageError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {"users", "clients"}:
        raise UsageError("Only 'users' and 'clients' entity types may be specified together")
    generic = any(opts.has(o) for o in ("entity-name", "entity-type", "entity-default"))
    specific = any(opts.has(flag) for flag, _ in ENTITY_FLAGS + DEFAULTS_FLAGS)
    if generic and specific:
        raise UsageError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")


def _check_connect_options(opts: ParsedOptions) -> None:
    servers = [o for o in ("bootstrap-server", "bootstrap-controller") if opts.has(o)]
    if opts.has("zookeeper") and servers:
        raise UsageError("Only one of --bootstrap-server or --zookeeper must be specified")
    if opts.has("all") and connect_mode(opts) != "bootstrap":
        raise UsageError("--bootstrap-server must be specified for --all")
    if opts.has("store") and (opts.has("zookeeper") or servers):
        raise UsageError(
            "--store names the embedded store; it cannot be combined with --zookeeper or --bootstrap-server"
        )


def _refuse_non_quota_types(types: list[str]) -> None:
    """Where kafka-configs would go on to check a broker id or act on a topic, group, ..."""
    unsupported = [t for t in types if t not in ("users", "clients", "ips")]
    if unsupported:
        raise UsageError(
            f"kconfigs manages client quotas only (users, clients, ips); use kafka-configs.sh for {unsupported[0]}"
        )


def _check_server_options(opts: ParsedOptions, texts: TextsSource) -> None:
    """3.x/4.x check these once the entity names are read (a repeated shorthand fails first)."""
    servers = [o for o in ("bootstrap-server", "bootstrap-controller") if opts.has(o)]
    if len(servers) > 1:
        raise UsageError(texts().two_servers)
    if opts.has("zk-tls-config-file") and servers:
        raise UsageError("Only the --zookeeper option can be used with the --zk-tls-config-file option.")


def _check_ip_names(
    opts: ParsedOptions,
    types: list[str],
    names: list[str],
    is_valid_ip: Callable[[str], bool],
    texts: TextsSource,
    hint: Callable[[str], str],
) -> None:
    if not any(names) or "ips" not in types:
        return
    for option in ("entity-name", "ip"):
        value = opts.value(option)  # joptsimple valueOf: a second --entity-name fails here, as in Kafka
        # 4.x dropped the "<default>" case from DynamicConfig.Ip.isValidIpEntity.
        default_refused = value == "<default>" and not texts().default_ip_is_an_ip
        if value is not None and (default_refused or not is_valid_ip(value)):
            raise UsageError(
                f"The entity name for {types[0]} must be a valid IP or resolvable host, but it is: {value}"
                + hint(value)
            )


def _check_alter(opts: ParsedOptions, types: list[str], names: list[str], texts: TextsSource) -> None:
    if not names:
        raise UsageError(texts().entity_name_required)
    if opts.has("add-config") and opts.has("add-config-file"):
        raise UsageError("Only one of --add-config or --add-config-file must be specified")
    if not any(opts.has(o) for o in ("add-config", "add-config-file", "delete-config")):
        raise UsageError(
            "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter"
        )
