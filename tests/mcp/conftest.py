"""Fixtures of the MCP tests (see `harness`): a fresh SQLite portal per test, and one portal with
its HTTP server per module (on SQLite, or on SQLite and PostgreSQL: `door`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from portal.adapters.sql.engine import make_engine

from .harness import HttpServer, Portal, http_server, portal_on
from .openmemory_client import postgres_database


@pytest.fixture
def portal(tmp_path: Path) -> Iterator[Portal]:
    """A fresh SQLite portal for one test."""
    with portal_on(make_engine(f"sqlite:///{tmp_path / 'memory.db'}"), tmp_path / "instance") as made:
        yield made


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Portal, HttpServer]]:
    """One SQLite portal and its HTTP server for a whole module (each test uses its own people)."""
    folder = tmp_path_factory.mktemp("mcp-http")
    with (
        portal_on(make_engine(f"sqlite:///{folder / 'memory.db'}"), folder / "instance") as made,
        http_server(made.env, folder / "server.log") as server,
    ):
        yield made, server


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def door(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Portal, HttpServer]]:
    """One portal and its HTTP server for a whole module, on SQLite and on PostgreSQL (a database of
    the module's own); each test uses a tenant of its own."""
    folder = tmp_path_factory.mktemp("openmemory")
    with ExitStack() as stack:
        if request.param == "sqlite":
            engine = make_engine(f"sqlite:///{folder / 'memory.db'}")
        else:
            engine = stack.enter_context(postgres_database(request.getfixturevalue("postgres_url")))
        portal = stack.enter_context(portal_on(engine, folder / "instance"))
        yield portal, stack.enter_context(http_server(portal.env, folder / "server.log"))
