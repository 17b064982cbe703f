"""An operator's shell on a migrated database, for the command-line tests that run on SQLite and on
PostgreSQL: made once per module and store (`prepared`), copied for each test (`copied`; on
PostgreSQL a database made from the prepared one as its template)."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from portal.adapters.cipher import generate_key
from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.janitor import settle_all

from .runner import run

STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def create_database(server_url: str, name: str, template: str | None = None) -> str:
    admin = make_engine(server_url)
    try:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
    finally:
        admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(server_url: str, name: str) -> None:
    settle_all(30)  # an erasure's VACUUM may still be running on it
    admin = make_engine(server_url)
    try:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@contextmanager
def prepared(request: pytest.FixtureRequest, folder: Path,
             setup: tuple[tuple[list[str], str | None], ...]) -> Iterator[dict[str, str]]:
    """A shell whose database the commands of `setup` (arguments, standard input) made, on the
    store `request.param` names."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    base.update(MEMORY_INSTANCE_PATH=str(folder / "instance"), MEMORY_EMBEDDER="none")
    server = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    name = f"template_{uuid.uuid4().hex[:16]}"
    if server is not None:
        base.update(MEMORY_DATABASE_URL=create_database(server, name), MEMORY_ENCRYPTION_KEYS=generate_key())
    try:
        for args, stdin in setup:
            done = run(args, base, stdin)
            assert done.returncode == 0, done.stderr
        yield base
    finally:
        if server is not None:
            drop_database(server, name)


@contextmanager
def copied(request: pytest.FixtureRequest, prepared: dict[str, str], folder: Path) -> Iterator[dict[str, str]]:
    """A copy of the prepared shell: its instance folder, and on PostgreSQL its database."""
    copy = {**prepared, "MEMORY_INSTANCE_PATH": str(folder / "instance")}
    if Path(prepared["MEMORY_INSTANCE_PATH"]).exists():  # on PostgreSQL with its keys given, nothing is kept there
        shutil.copytree(prepared["MEMORY_INSTANCE_PATH"], copy["MEMORY_INSTANCE_PATH"])
    if "MEMORY_DATABASE_URL" not in prepared:
        yield copy
        return
    server = request.getfixturevalue("postgres_url")
    name = f"test_{uuid.uuid4().hex[:16]}"
    copy["MEMORY_DATABASE_URL"] = create_database(server, name, template=make_url(prepared["MEMORY_DATABASE_URL"]).database)
    try:
        yield copy
    finally:
        drop_database(server, name)
