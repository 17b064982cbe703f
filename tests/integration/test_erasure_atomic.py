"""An erasure and its audit entry are one transaction, on SQLite and PostgreSQL: when the database
refuses the audit entry (a trigger stands in for a crash between the two writes), nothing is
erased; a person's pause, resume and export likewise leave no record of what did not happen, and
nothing happens without its record."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from portal.adapters.sql.store import SqlStore
from portal.domain.audit import AuditNote
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

HERE = Place("ada", "tenant-a")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    yield request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")


def refuse_audit(engine: Engine, action: str) -> None:
    """Make the database refuse audit entries of this action (what a crash mid-way would leave)."""
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text(
                "CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF NEW.action = '{action}' THEN RAISE EXCEPTION 'audit refused'; END IF; RETURN NEW; END $$"
            ))
            conn.execute(text("CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log "
                              "FOR EACH ROW EXECUTE FUNCTION refuse_audit()"))
        else:
            conn.execute(text(f"CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log WHEN NEW.action = '{action}' "
                              "BEGIN SELECT RAISE(ABORT, 'audit refused'); END"))


def actions(store: SqlStore) -> list[str]:
    return [e.action for e in store.audit_trail()]


@pytest.mark.parametrize("step", ["person.erased_all", "person.paused", "person.exported"])
def test_nothing_happens_without_its_audit_entry(engine: Engine, step: str) -> None:
    store = SqlStore(engine)
    service = MemoryService(store)
    assert service.remember(HERE, "Had knee surgery in March").ok
    refuse_audit(engine, step)
    note = AuditNote("user-1", "member", step)
    with pytest.raises(DBAPIError):
        if step == "person.erased_all":
            service.forget_all(HERE, audit=note)
        elif step == "person.paused":
            service.pause(HERE, audit=note)
        else:
            service.export(HERE, audit=note)
    assert [m.text for m in service.list(HERE).items] == ["Had knee surgery in March"]
    assert service.is_paused(HERE) is False
    assert actions(store) == []


def test_with_its_entry_the_change_and_the_record_both_stay(engine: Engine) -> None:
    store = SqlStore(engine)
    service = MemoryService(store)
    assert service.remember(HERE, "Had knee surgery in March").ok
    service.pause(HERE, audit=AuditNote("user-1", "member", "person.paused"))
    exported = service.export(HERE, audit=AuditNote("user-1", "member", "person.exported"))
    counts = service.forget_all(HERE, audit=AuditNote("user-1", "member", "person.erased_all"))
    assert len(exported["memories"]) == 1 and counts["memories"] == 1
    assert actions(store) == ["person.paused", "person.exported", "person.erased_all"]
    trail = store.audit_trail()
    assert trail[1].counts == {"memories": 1} and trail[2].counts == counts
    assert service.is_paused(HERE) is True and service.list(HERE).items == []


# ---------------------------------------------------------------------------- what the database keeps


def test_the_vacuumed_tables_are_the_tables_that_hold_a_persons_rows() -> None:
    from portal.adapters.sql.engine import OWNER_TABLE_NAMES
    from portal.adapters.sql.tables import OWNER_TABLES

    assert set(OWNER_TABLE_NAMES) == {t.name for t in OWNER_TABLES}


@pytest.mark.postgres
def test_a_persons_erasure_vacuums_their_tables_on_postgresql(pg_engine: Engine) -> None:
    store = SqlStore(pg_engine)
    service = MemoryService(store)
    assert service.remember(HERE, "Had knee surgery in March").ok

    def vacuumed() -> dict[str, object]:
        with pg_engine.connect() as conn:
            return dict(conn.execute(text("SELECT relname, last_vacuum FROM pg_stat_user_tables")).all())

    assert vacuumed()["memories"] is None
    service.purge_owner(HERE.owner_id, [HERE.scope])
    assert store.settle(30)  # the VACUUM runs off the request's path
    after = vacuumed()
    assert all(after[name] is not None for name in ("memories", "memory_revisions", "idempotency_receipts"))


def test_sqlite_zeroes_what_it_deletes_and_truncates_its_log_after_an_erasure(sqlite_engine: Engine) -> None:
    store = SqlStore(sqlite_engine)
    service = MemoryService(store)
    database = Path(str(sqlite_engine.url.database))
    saved = service.remember(HERE, "Had knee surgery in Zqvarnby")
    assert saved.ok
    with sqlite_engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA secure_delete").scalar() == 1
    wal = database.with_name(database.name + "-wal")
    assert wal.stat().st_size > 0 and b"Zqvarnby" in wal.read_bytes() + database.read_bytes()
    service.forget(HERE, saved.memory.id)
    assert wal.stat().st_size == 0  # truncated: the page images that held the text are gone
    assert b"Zqvarnby" not in database.read_bytes() and b"zqvarnbi" not in database.read_bytes().lower()


def test_a_checkpoint_kept_back_by_a_reader_is_done_as_soon_as_the_reader_is_gone(sqlite_engine: Engine) -> None:
    import sqlite3
    import time

    store = SqlStore(sqlite_engine)
    service = MemoryService(store)
    database = Path(str(sqlite_engine.url.database))
    wal = database.with_name(database.name + "-wal")
    saved = service.remember(HERE, "Had knee surgery in Zqvarnby")
    assert saved.ok
    reader = sqlite3.connect(database, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchone()  # holds a snapshot from before the forget
    started = time.monotonic()
    service.forget(HERE, saved.memory.id)
    assert time.monotonic() - started < 1.5  # the forget does not wait on the reader
    assert wal.stat().st_size > 0  # the reader keeps the log from being truncated yet
    reader.execute("COMMIT")
    reader.close()
    assert store.settle(10)  # no other write needed: the janitor tries again on its own
    assert wal.stat().st_size == 0 and b"Zqvarnby" not in database.read_bytes()
