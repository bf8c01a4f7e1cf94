"""Fixtures shared by the gateway integration tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tansu_upstream(tansu_broker) -> str:
    """Bootstrap address of the harness' tansu broker, the gateway's default upstream."""
    return tansu_broker.bootstrap
