"""Property tests: arbitrary --add-config strings, entity names and whole argv never raise anything
but a KconfigsError, and names survive sanitize/desanitize and the entity-path round trip."""

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconfigs import args as A
from kconfigs.config_grammar import parse_add_config
from kconfigs.errors import KconfigsError
from kconfigs.ip_names import is_valid_ip_entity
from kconfigs.model import QuotaEntity
from kconfigs.sanitize import desanitize, sanitize
from kconfigs.service import ConfigChange, merge_update
from kconfigs.targets import describe_target, entity_of, zk_pairs
from kconfigs.znode_codec import config_znode

# Characters that matter to the grammar, plus anything else.
GRAMMAR_TEXT = st.text(alphabet=st.sampled_from(list("=,[] \tab_1.-")) | st.characters(), max_size=40)
NAMES = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
KEYS = st.sampled_from(
    [
        "producer_byte_rate",
        "consumer_byte_rate",
        "request_percentage",
        "controller_mutation_rate",
        "connection_creation_rate",
        "producer_ids_rate",
        "SCRAM-SHA-256",
        "foo",
        "",
    ]
)
VALUES = st.one_of(
    st.integers(-5, 2**64).map(str), st.floats(allow_nan=True).map(str), st.text(string.printable, max_size=8)
)


@given(GRAMMAR_TEXT)
def test_add_config_parses_or_raises_a_kconfigs_error(text):
    try:
        configs = parse_add_config(text)
    except KconfigsError as err:
        assert "\n" not in str(err)
        return
    for key, value in configs.items():
        assert key == key.strip() and "[" not in value and "]" not in value and value == value.strip()


@given(
    st.dictionaries(
        st.text(string.ascii_letters + "_", min_size=1, max_size=10),
        st.text(string.ascii_letters + string.digits + " ,=", max_size=10),
        max_size=4,
    )
)
def test_bracketed_values_round_trip_through_the_grammar(configs):
    text = ",".join(f"{k}=[{v}]" for k, v in configs.items())
    assert parse_add_config(text) == {k: v.strip() for k, v in configs.items()} if text else True


@given(NAMES)
def test_sanitize_round_trips_and_yields_a_single_path_component(name):
    sanitized = sanitize(name)
    assert desanitize(sanitized) == name
    assert "/" not in sanitized and sanitized.isascii()


@given(NAMES.filter(bool), NAMES.filter(bool))  # "" is the default in every front end, never a name
def test_entity_paths_round_trip_or_are_refused(user, client):
    entity = QuotaEntity(user=user, client_id=client)
    try:
        config_znode(entity.path)
    except KconfigsError:
        assert {".", ".."} & {sanitize(user), sanitize(client)}
        return
    assert QuotaEntity.from_path(entity.path) == entity


ARGV_TOKENS = (
    st.sampled_from(
        [
            "--alter",
            "--describe",
            "--entity-type",
            "users",
            "clients",
            "ips",
            "topics",
            "--entity-name",
            "--entity-default",
            "--user",
            "--client",
            "--ip",
            "--user-defaults",
            "--client-defaults",
            "--ip-defaults",
            "--add-config",
            "--delete-config",
            "--zookeeper",
            "h:1",
            "--bootstrap-server",
            "1.2.3.4",
            "a=1",
            "x",
        ]
    )
    | NAMES
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ARGV_TOKENS, max_size=10), KEYS, VALUES)
def test_any_argv_checks_pairs_and_merges_or_raises_a_kconfigs_error(argv, key, value):
    try:
        opts = A.parse_argv(argv)
        A.check_args(opts, is_valid_ip_entity)
        types, names = A.entity_types(opts), A.entity_names(opts)
        if A.connect_mode(opts) == "bootstrap":
            return
        pairs = zk_pairs(types, names, alter=opts.has("alter"))
        if opts.has("describe"):
            describe_target(pairs)
            return
        entity = entity_of(pairs)
        config_znode(entity.path)
        merge_update(entity, ConfigChange(add={key: value}, delete=[]))({})
    except KconfigsError as err:
        assert str(err) and "\n" not in str(err)
