"""Property: whatever mix of flags, empty or blank values, KCONFIGS_* variables, profiles and typos a
command line has, it either fails with one line on stderr and leaves every store byte-identical,
or succeeds and changes exactly the store the precedence rules name (flag > environment >
profile > embedded default), in both grammars. Named stores exist (``kconfigs init``) except
``missing.db``, which a write must refuse rather than create."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import run_main
from kconfigs.stores.sqlite import SqliteStore

BLANKS = ("", " ", "\t")
PROFILES = ("p", "q")  # defined in the config file; anything else is a typo
STORE_FILES = ("flag.db", "env.db", "p.db", "q.db", "home/quotas.db", "missing.db")
CREATED = ("flag.db", "env.db", "p.db", "q.db")

maybe_blank = st.sampled_from(BLANKS)
flag_store = st.one_of(st.none(), st.sampled_from(("flag.db", "missing.db")), maybe_blank)
env_store = st.one_of(st.none(), st.just("env.db"), maybe_blank)
profile_name = st.one_of(st.none(), st.sampled_from(PROFILES), st.sampled_from(("pp", "P", "prod")), maybe_blank)
server_flag = st.one_of(
    st.none(), st.tuples(st.sampled_from(("--zookeeper", "--bootstrap-server", "--bootstrap-controller")), maybe_blank)
)


@dataclass(frozen=True)
class Case:
    grammar: str
    flag_store: str | None
    env_store: str | None
    flag_profile: str | None
    env_profile: str | None
    default_profile: str | None
    blank_server: tuple[str, str] | None
    blank_server_env: bool
    typo_flag: tuple[str, str] | None


typo_flag = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from(("--stor", "--zookeper", "--profil", "--bootstrap-servers")),
        st.sampled_from(("flag.db", "127.0.0.1:1", "p")),
    ),
)
cases = st.builds(
    Case,
    st.sampled_from(("kafka-configs", "subcommand")),
    flag_store,
    env_store,
    profile_name,
    profile_name,
    st.one_of(st.none(), st.sampled_from(PROFILES), st.just("typo")),
    server_flag,
    st.booleans(),
    typo_flag,
)


def expected_store(case: Case) -> str | None:
    """The store the rules name, or None when the command line must be refused."""
    given = [case.flag_store, case.env_store, case.flag_profile, case.env_profile]
    if case.blank_server is not None or case.blank_server_env or any(v is not None and not v.strip() for v in given):
        return None
    if case.typo_flag is not None:  # a misspelt option is never taken for another, nor ignored
        return None
    explicit_profile = case.flag_profile or case.env_profile
    if explicit_profile is not None and explicit_profile not in PROFILES:
        return None
    if case.flag_store or case.env_store:
        named = case.flag_store or case.env_store
        return None if named == "missing.db" else named
    profile = explicit_profile or case.default_profile
    if profile == "typo":
        return None
    return f"{profile}.db" if profile else "home/quotas.db"


def _argv(case: Case) -> list[str]:
    store = [] if case.flag_store is None else ["--store", case.flag_store]
    profile = [] if case.flag_profile is None else ["--profile", case.flag_profile]
    server = [] if case.blank_server is None else list(case.blank_server)
    server += [] if case.typo_flag is None else list(case.typo_flag)
    if case.grammar == "kafka-configs":
        return [*server, *store, *profile, "--alter", "--user", "u", "--add-config", "producer_byte_rate=7"]
    return ["alter", "--user", "u", "--set", "producer_byte_rate=7", *server, *store, *profile]


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    saved = {k: v for k, v in os.environ.items() if k.startswith(("KCONFIGS_", "XDG_CONFIG_HOME"))}
    for key in saved:
        del os.environ[key]
    os.environ.update(values)
    try:
        yield
    finally:
        for key in [k for k in os.environ if k.startswith(("KCONFIGS_", "XDG_CONFIG_HOME"))]:
            del os.environ[key]
        os.environ.update(saved)


def _digests(root: Path) -> dict[str, str | None]:
    return {
        name: hashlib.sha256((root / name).read_bytes()).hexdigest() if (root / name).exists() else None
        for name in STORE_FILES
    }


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases)
def test_a_command_line_fails_in_one_line_or_changes_exactly_the_store_it_names(case):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = root / "config.toml"
        config.write_text(
            ("" if case.default_profile is None else f'default_profile = "{case.default_profile}"\n')
            + "".join(f'[profiles.{p}]\nstore = "{root / (p + ".db")}"\n' for p in PROFILES)
        )
        env = {"KCONFIGS_HOME": str(root / "home"), "KCONFIGS_CONFIG": str(config)}
        if case.env_store is not None:
            env["KCONFIGS_STORE"] = case.env_store if not case.env_store.endswith(".db") else str(root / case.env_store)
        if case.env_profile is not None:
            env["KCONFIGS_PROFILE"] = case.env_profile
        if case.blank_server_env:
            env["KCONFIGS_ZOOKEEPER"] = " "
        argv = [str(root / a) if a in ("flag.db", "missing.db") else a for a in _argv(case)]
        for name in CREATED:
            SqliteStore(root / name).close()
        before = _digests(root)
        with _environment(env):
            code, out, err = run_main(*argv)
        after = _digests(root)
        expected = expected_store(case)
        if expected is None:
            assert code != 0 and out == "" and len(err.splitlines()) == 1, (argv, env, code, out, err)
            assert after == before
        else:
            assert code == 0, (argv, env, err)
            assert [name for name in STORE_FILES if after[name] != before[name]] == [expected], (argv, env)
