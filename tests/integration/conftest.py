"""Fixtures shared by the integration test modules (gateway upstream, admin-API broker and
store, the declarative CLI's isolated environment)."""

from __future__ import annotations

import os

import pytest
from declarative_support import QUOTAS

from harness.versions import KAFKA_3_VERSION, KAFKA_4_VERSION

ADMIN_API_VERSIONS = [KAFKA_3_VERSION, KAFKA_4_VERSION]


@pytest.fixture(scope="session")
def tansu_upstream(tansu_broker) -> str:
    """Bootstrap address of the harness' tansu broker, the gateway's default upstream."""
    return tansu_broker.bootstrap


# -- shared by the admin-API store tests: a SCRAM KRaft broker per version, a store on it --
@pytest.fixture(params=ADMIN_API_VERSIONS)
def broker(request, kraft_broker_factory):
    return kraft_broker_factory(request.param, sasl_scram=True)


@pytest.fixture
def store(broker):
    from kconfigs.stores.admin_api import open_admin_store

    opened = open_admin_store(broker.bootstrap, None, timeout_ms=20000)
    yield opened
    opened.close()


# -- shared by the declarative CLI tests --
@pytest.fixture
def isolated_env(tmp_path, monkeypatch):
    """No KCONFIGS_* from the outside; the default store and config dir inside tmp_path."""
    for name in [n for n in os.environ if n.startswith("KCONFIGS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KCONFIGS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path


@pytest.fixture
def env(isolated_env):
    """:func:`isolated_env` with a quotas.toml in it."""
    (isolated_env / "quotas.toml").write_text(QUOTAS)
    return isolated_env
