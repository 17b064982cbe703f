"""Fixtures of the MCP tests (see `harness`): a fresh SQLite portal per test, and one portal with
its HTTP server per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from portal.adapters.sql.engine import make_engine

from .harness import HttpServer, Portal, http_server, portal_on


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
