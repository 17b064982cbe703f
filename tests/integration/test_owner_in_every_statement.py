"""Every statement the SQL store sends that touches a person's rows (`OWNER_TABLES`) is pinned to
one owner, and to one place, by its own conditions: what lets the schema be spread by owner over
several database nodes (docs/operations.md, "Scaling past one database").

The whole store contract (and the records contract, whose units of work erase people) runs on
SQLite and on PostgreSQL with a `before_cursor_execute` listener on the engine. Each statement is
judged from the SQLAlchemy statement it was compiled from: every reference to an owner table, in
any FROM, JOIN, subquery, EXISTS or RETURNING, must have its `owner_id` and its `scope` equal to
(or IN) bound values, or equal to the same column of a reference pinned already (a co-located join
or correlation); conditions under OR or NOT pin nothing. An INSERT must name both columns. Text
and driver SQL naming an owner table pins nothing. The few statements that reach past one place
on purpose (maintenance, erasing a person in every scope) are listed in `CROSSINGS`, each matched
by where it is sent from, its kind, and exactly what it leaves loose.
"""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import and_, event, insert, or_, select, text, tuple_
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SAWarning
from sqlalchemy.sql import dml, operators
from sqlalchemy.sql.elements import BinaryExpression, BindParameter, BooleanClauseList, ClauseList, ColumnClause, Grouping, Label
from sqlalchemy.sql.elements import Tuple as SqlTuple
from sqlalchemy.sql.selectable import Alias, AliasedReturnsRows, FromClause, Join, Select, SelectBase, TableClause

from portal.adapters.sql import engine as sql_engine
from portal.adapters.sql.store import DEFAULT_CACHE_BYTES, SqlStore
from portal.adapters.sql.tables import OWNER_TABLES, memories, memory_revisions
from portal.adapters.sql.uow import SqlRecords
from portal.contract import RecordsContract, StoreContract

OWNER_COLUMNS = {t.name: {c for c in ("owner_id", "scope") if c in t.c} for t in OWNER_TABLES}
SQL_ADAPTERS = str(Path(sql_engine.__file__).parent)
Loose = frozenset[tuple[str, str]]


def people(*tables: str) -> Loose:  # pinned to no owner (nor scope): it crosses people
    return frozenset((t, c) for t in tables for c in ("owner_id", "scope"))


def scopes(*tables: str) -> Loose:  # pinned to one owner, not to one of their scopes
    return frozenset((t, "scope") for t in tables)


@dataclass(frozen=True)
class Crossing:
    """A statement allowed to reach past one place: sent from `origin` (the innermost functions of
    portal.adapters.sql on the stack, innermost first), of `kind`, leaving exactly `loose` loose."""

    origin: tuple[str, ...]
    kind: str
    loose: Loose
    reason: str
    only: str | None = None  # the one dialect that sends it

    def matches(self, seen: Statement) -> bool:
        return seen.origin[: len(self.origin)] == self.origin and (seen.kind, seen.loose) == (self.kind, self.loose)

    def expected(self, dialect: str) -> bool:
        """Whether a full contract run on `dialect` must send it (its function exists yet)."""
        module, _, path = self.origin[0].partition(".")
        found: Any = importlib.import_module(f"portal.adapters.sql.{module}")
        for part in path.split("."):
            found = getattr(found, part, None)
        return found is not None and self.only in (None, dialect)


ALL_OWNER_TABLES = tuple(OWNER_COLUMNS)
PRUNE = "maintenance.StoreMaintenance._delete_in_batches"
KEEPING = "maintenance.StoreMaintenance"
PURGE = ("uow.purge", "uow.SqlUnitOfWork.purge_owner")
CROSSINGS = (
    Crossing(("store.SqlStore.needing_vector",), "SELECT", people("memories"),
             "reindex: the memories of every place lacking a vector of the model, in id order, a batch at a time"),
    Crossing(("store.SqlStore.places",), "SELECT", people("memories"), "every place holding memories (maintenance)"),
    Crossing((f"{KEEPING}.archived_before",), "SELECT", people("memories"),
             "retention: archived memories left untouched since the cutoff, in every place"),
    Crossing((PRUNE, f"{KEEPING}.prune_history"), "SELECT",
             people("memory_revisions", "memory_revisions AS later", "memories"),
             "retention: the keys of wordings replaced before the cutoff, in every place (each batch's DELETE is by owner)"),
    Crossing((PRUNE, f"{KEEPING}.prune_receipts"), "SELECT", people("idempotency_receipts"),
             "retention: the keys of completed receipts older than the cutoff, in every place"),
    Crossing((PRUNE, f"{KEEPING}.prune_uses"), "SELECT", people("app_uses"),
             "retention: the keys of app uses last counted before the cutoff, in every place"),
    Crossing((PRUNE, f"{KEEPING}.prune_uses"), "SELECT", people("conversation_uses"),
             "retention: the keys of conversations' uses last made before the cutoff, in every place"),
    Crossing((f"{KEEPING}.expired",), "SELECT", people("memories"),
             "the sweep: memories whose expiry has come, in every place (each is erased under its place's lock)"),
    Crossing((PRUNE, f"{KEEPING}.prune_jobs"), "SELECT", people("consolidation_jobs"),
             "retention: the keys of jobs over since the cutoff, in every place"),
    Crossing((PRUNE, f"{KEEPING}.expire_revisions"), "SELECT", people("memory_revisions"),
             "the sweep: the keys of earlier wordings whose time is over, in every place (each DELETE is by owner)"),
    Crossing((f"{KEEPING}.expire_summaries",), "SELECT", people("consolidation_jobs"),
             "the sweep: the keys of job summaries never read in time, in every place (each UPDATE is by owner)"),
    Crossing(PURGE[:1], "SELECT", scopes("memories"),
             "erasing a person or one place: the owner's scopes, so each place's lock is taken in order before deleting",
             only="postgresql"),
    *(Crossing(PURGE, "DELETE", scopes(t), "erasing a person in every scope (one owner: one shard)")
      for t in ALL_OWNER_TABLES),
    *(Crossing(("engine.vacuum_owner_tables",), "DRIVER", people(t),
               "after an erasure: VACUUM of each table it touched, so their dead rows go now", only="postgresql")
      for t in sql_engine.OWNER_TABLE_NAMES),
    Crossing((f"{KEEPING}.job_place",), "SELECT", people("consolidation_jobs"),
             "a background job's place, looked up by the job's id alone (the id is all a worker holds)"),
    Crossing((f"{KEEPING}.people",), "SELECT", frozenset({("memories", "owner_id")}),
             "the people of one tenant (mem0's users()): owner ids only, in one statement"),
    Crossing((f"{KEEPING}.people",), "SELECT", frozenset({("memories", "owner_id"), ("app_controls", "owner_id")}),
             "the people of one tenant but those who blocked the asking app (the controls of each, by owner)"),
    Crossing((f"{KEEPING}.memory_place",), "SELECT", frozenset({("memories", "owner_id")}),
             "a memory's person within its tenant, looked up by the memory's id alone (mem0's routes name no person)"),
    *(Crossing((f"{KEEPING}.scopes_of",), "SELECT", scopes(t),
               "where a person named by their owner id alone is (the operator's command line): one owner's scopes")
      for t in ALL_OWNER_TABLES if t != "memory_places"),
    Crossing((f"{KEEPING}.unfinished_jobs",), "SELECT", people("consolidation_jobs"),
             "the sweep for jobs whose worker died: unfinished jobs not updated since the lease, in every place"),
)


# ---------------------------------------------------------------------------- judging a statement

def _conjuncts(clause: Any) -> list[Any]:
    if clause is None:
        return []
    if isinstance(clause, Grouping):
        return _conjuncts(clause.element)
    if isinstance(clause, BooleanClauseList) and clause.operator is operators.and_:
        return [c for part in clause.clauses for c in _conjuncts(part)]
    return [clause]


def _column(element: Any) -> ColumnClause[Any] | None:
    while isinstance(element, (Grouping, Label)):
        element = element.element
    return element if isinstance(element, ColumnClause) and isinstance(element.table, FromClause) else None


def _is_value(element: Any) -> bool:
    while isinstance(element, Grouping):
        element = element.element
    return isinstance(element, BindParameter) or (
        isinstance(element, ClauseList) and all(_is_value(e) for e in element.clauses))


def _pins(cond: Any, pinned: set[tuple[FromClause, str]]) -> Iterator[tuple[FromClause, str]]:
    """The (reference, column) pairs this condition pins, given those pinned already."""
    if not isinstance(cond, BinaryExpression):
        return
    if cond.operator is operators.eq:
        for a, b in ((cond.left, cond.right), (cond.right, cond.left)):
            col, other = _column(a), _column(b)
            if col is not None and (_is_value(b) or (other is not None and other.name == col.name
                                                     and (other.table, other.name) in pinned)):
                yield col.table, col.name
    elif cond.operator is operators.in_op and _is_value(cond.right):
        left = cond.left.element if isinstance(cond.left, Grouping) else cond.left
        for part in left.clauses if isinstance(left, SqlTuple) else [left]:
            col = _column(part)
            if col is not None:
                yield col.table, col.name


def _owner_table(from_: Any) -> str | None:
    table = from_.element if isinstance(from_, Alias) else from_
    return table.name if isinstance(table, TableClause) and table.name in OWNER_COLUMNS else None


def _name(from_: FromClause) -> str:
    table = _owner_table(from_)
    return f"{table} AS {from_.name}" if isinstance(from_, Alias) else str(table)


def _correlated(sel: Select[Any], from_: FromClause, outer_refs: list[FromClause]) -> bool:
    """Whether SQLAlchemy leaves this FROM of a nested SELECT to the enclosing one (correlation)."""
    if from_ not in outer_refs:
        return False
    if sel._correlate:
        return from_ in sel._correlate
    if sel._correlate_except is not None:
        return from_ not in sel._correlate_except
    return bool(sel._auto_correlate)


def _nested(element: Any) -> Iterator[SelectBase]:
    """The SELECTs inside an expression (subqueries, EXISTS), not looking into FROM elements."""
    for child in element.get_children():
        if isinstance(child, SelectBase):
            yield child
        elif not isinstance(child, FromClause):
            yield from _nested(child)


@dataclass
class Judge:
    loose: set[tuple[str, str]] = field(default_factory=set)
    touched: set[str] = field(default_factory=set)

    def refs(self, own: list[FromClause], conds: list[Any], outer: set[tuple[FromClause, str]]) -> set[tuple[FromClause, str]]:
        pinned: set[tuple[FromClause, str]] = set()
        while True:
            new = {p for cond in conds for p in _pins(cond, pinned | outer) if p[0] in own} - pinned
            if not new:
                break
            pinned |= new
        for ref in own:
            table = _owner_table(ref)
            if table is not None:
                self.touched.add(table)
                self.loose |= {(_name(ref), c) for c in OWNER_COLUMNS[table] if (ref, c) not in pinned}
        return pinned

    def select(self, sel: SelectBase, outer_refs: list[FromClause], outer: set[tuple[FromClause, str]]) -> None:
        if not isinstance(sel, Select):  # a UNION and the like: each part on its own
            for part in _nested(sel):
                self.select(part, outer_refs, outer)
            return
        own: list[FromClause] = []
        conds = _conjuncts(sel.whereclause)
        pending = list(sel.get_final_froms())
        while pending:
            from_ = pending.pop()
            if isinstance(from_, Join):
                pending += [from_.left, from_.right]
                conds += _conjuncts(from_.onclause)
            elif isinstance(from_, AliasedReturnsRows) and isinstance(from_.element, SelectBase):
                self.select(from_.element, [], set())  # a subquery or CTE in FROM is not correlated
            elif not _correlated(sel, from_, outer_refs):  # a correlated one is judged where it is FROM
                own.append(from_)
        pinned = self.refs(own, conds, outer)
        for inner in _nested(sel):
            self.select(inner, [*outer_refs, *own], outer | pinned)

    def dml(self, stmt: Any, sql: str) -> None:
        target = stmt.table
        table = _owner_table(target)
        # The owner is the distribution column: an UPDATE (or an upsert's DO UPDATE) never rewrites it.
        if table is not None and any(re.search(r'(?:^|, )"?owner_id"?\s*=', assignments)
                                     for assignments in re.findall(r"\bSET (.*?)(?= WHERE | RETURNING |$)", sql, re.S)):
            self.loose.add((table, "owner_id rewritten"))
        if isinstance(stmt, dml.Insert):
            columns = re.match(r"INSERT INTO \S+ \(([^)]*)\)", sql)
            named = {c.strip().strip('"') for c in columns.group(1).split(",")} if columns else set()
            if table is not None:
                self.touched.add(table)
                self.loose |= {(table, c) for c in OWNER_COLUMNS[table] - named}
            for inner in _nested(stmt):  # INSERT ... SELECT and RETURNING subqueries: not correlated
                self.select(inner, [], set())
            return
        pinned = self.refs([target], _conjuncts(stmt.whereclause), set())
        for inner in _nested(stmt):
            self.select(inner, [target], pinned)


def judge(statement: Any, sql: str) -> tuple[str, Loose, frozenset[str]]:
    """The statement's kind, what it leaves loose, and the owner tables it touches."""
    found = Judge()
    if isinstance(statement, SelectBase):
        kind = "SELECT"
        found.select(statement, [], set())
    elif isinstance(statement, dml.Insert | dml.Update | dml.Delete):
        kind = type(statement).__name__.upper()
        found.dml(statement, sql)
    else:  # text() or driver SQL: nothing to read conditions from
        kind = "DRIVER" if statement is None else "TEXT"
    # A table the SQL names that the reading above did not find (text, or a shape it does not
    # know) is loose: nothing passes unread.
    unread = {t for t in OWNER_COLUMNS if re.search(rf"\b{t}\b", sql)} - found.touched
    found.touched |= unread
    found.loose |= {(t, c) for t in unread for c in OWNER_COLUMNS[t]}
    return kind, frozenset(found.loose), frozenset(found.touched)


@dataclass(frozen=True)
class Statement:
    kind: str
    loose: Loose
    touched: frozenset[str]
    origin: tuple[str, ...]
    sql: str

    def allowed_by(self) -> Crossing | None:
        return next((c for c in CROSSINGS if c.matches(self)), None)


def _origin() -> tuple[str, ...]:
    frame, found = sys._getframe(2), []
    while frame is not None:
        if frame.f_code.co_filename.startswith(SQL_ADAPTERS):
            found.append(f"{Path(frame.f_code.co_filename).stem}.{frame.f_code.co_qualname}")
        frame = frame.f_back
    return tuple(found)


@contextmanager
def sent_to(engine: Engine) -> Iterator[list[Statement]]:
    """Every statement the engine sends meanwhile, judged."""
    seen: list[Statement] = []

    def capture(conn: Any, cursor: Any, sql: str, params: Any, context: Any, many: bool) -> None:
        compiled = getattr(context, "compiled", None)
        statement = getattr(context, "invoked_statement", None) if compiled is not None else None
        seen.append(Statement(*judge(statement, sql), _origin(), sql))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", capture)


# ---------------------------------------------------------------------------- the contract, watched

@dataclass
class Tally:
    """What one test class's run sent, for the class-wide checks."""

    tests: set[str] = field(default_factory=set)
    touched: set[str] = field(default_factory=set)
    used: set[Crossing] = field(default_factory=set)


class Watched:
    """The store fixture with every statement of the engine captured and judged at teardown."""

    dialect = "sqlite"
    cache_bytes = DEFAULT_CACHE_BYTES  # 0: rankings read by SQL instead of through the recall cache
    whole_schema = True  # a full run must touch every owner table and send every expected crossing

    @pytest.fixture(scope="class")
    @classmethod
    def tally(cls) -> Iterator[Tally]:
        tally = Tally()
        yield tally
        if cls.whole_schema and tally.tests >= {n for n in dir(cls) if n.startswith("test_")}:  # not a -k subset
            assert set(OWNER_COLUMNS) <= tally.touched, f"never touched: {set(OWNER_COLUMNS) - tally.touched}"
            unused = [c for c in CROSSINGS if c.expected(cls.dialect) and c not in tally.used]
            assert not unused, "allowed crossings the run never sent:\n" + "\n".join(map(repr, unused))

    def watched(self, engine: Engine, tally: Tally, request: pytest.FixtureRequest) -> Iterator[SqlStore]:
        store = SqlStore(engine, cache_bytes=self.cache_bytes)
        with sent_to(engine) as seen:
            yield store
            store.settle()  # an erasure's VACUUM (PostgreSQL) is sent by the janitor thread
        checked = [s for s in seen if s.touched]
        findings = [s for s in checked if s.loose and s.allowed_by() is None]
        tally.tests.add(request.node.originalname)
        tally.touched |= {t for s in checked for t in s.touched}
        tally.used |= {c for s in checked if s.loose and (c := s.allowed_by()) is not None}
        assert not findings, "statements not pinned to one place:\n" + "\n\n".join(
            f"{s.kind} from {' < '.join(s.origin[:3])} leaves {sorted(s.loose)} loose:\n{s.sql}" for s in findings)


class TestSqliteStore(Watched, StoreContract):
    @pytest.fixture
    def store(self, sqlite_engine: Engine, tally: Tally, request: pytest.FixtureRequest) -> Iterator[SqlStore]:
        yield from self.watched(sqlite_engine, tally, request)


@pytest.mark.postgres
class TestPostgresStore(Watched, StoreContract):
    dialect = "postgresql"
    vector_dimensions = 8

    @pytest.fixture
    def store(self, pg_engine: Engine, tally: Tally, request: pytest.FixtureRequest) -> Iterator[SqlStore]:
        yield from self.watched(pg_engine, tally, request)


class TestSqliteStoreWithoutCache(TestSqliteStore):
    cache_bytes = 0


@pytest.mark.postgres
class TestPostgresStoreWithoutCache(TestPostgresStore):
    cache_bytes = 0


class TestSqliteRecords(Watched, RecordsContract):
    whole_schema = False

    @pytest.fixture
    def store(self, sqlite_engine: Engine, tally: Tally, request: pytest.FixtureRequest) -> Iterator[SqlStore]:
        yield from self.watched(sqlite_engine, tally, request)

    @pytest.fixture
    def records(self, store: SqlStore) -> SqlRecords:
        return SqlRecords(store)


@pytest.mark.postgres
class TestPostgresRecords(TestSqliteRecords):
    dialect = "postgresql"

    @pytest.fixture
    def store(self, pg_engine: Engine, tally: Tally, request: pytest.FixtureRequest) -> Iterator[SqlStore]:
        yield from self.watched(pg_engine, tally, request)


# ---------------------------------------------------------------------------- the judge can fail

M, R = memories.c, memory_revisions.c


def loose_of(statement: Any) -> Loose:
    return judge(statement, str(statement.compile(dialect=sqlite.dialect())))[1]


def test_the_judge_finds_what_a_statement_leaves_loose() -> None:
    assert loose_of(select(M.id).where(M.owner_id == "ada", M.scope == "s")) == frozenset()
    assert loose_of(select(M.id).where(M.scope == "s")) == {("memories", "owner_id")}
    assert loose_of(select(M.id).where(or_(M.owner_id == "ada", M.id == "x"), M.scope == "s")) == {("memories", "owner_id")}
    assert loose_of(select(M.id).where(M.owner_id.in_(["ada", "bob"]), M.scope == "s")) == frozenset()
    assert loose_of(select(M.id).where(M.owner_id == M.scope, M.scope == "s")) == {("memories", "owner_id")}
    here = and_(M.owner_id == "ada", M.scope == "s")
    colocated = and_(R.memory_id == M.id, R.owner_id == M.owner_id, R.scope == M.scope)
    assert loose_of(select(M.id).join(memory_revisions, colocated).where(here)) == frozenset()
    assert loose_of(select(M.id).join(memory_revisions, R.memory_id == M.id).where(here)) == people("memory_revisions")
    assert loose_of(select(M.id).where(here, select(R.memory_id).where(R.memory_id == M.id).exists())) == people(
        "memory_revisions")
    assert loose_of(select(M.id).where(here, select(M.id).where(M.id == "x").correlate(None).exists())) == people("memories")
    unpinned = select(M.id).where(M.scope == "s").cte()
    assert loose_of(select(unpinned.c.id)) == {("memories", "owner_id")}
    assert loose_of(memories.delete().where(tuple_(M.owner_id, M.scope, M.id).in_([("ada", "s", "x")]))) == frozenset()
    assert loose_of(memories.update().where(M.id == "x").values(seen=True)) == people("memories")
    assert loose_of(memories.update().where(M.owner_id == "ada", M.scope == "s").values(owner_id="ada")) == {
        ("memories", "owner_id rewritten")}
    with warnings.catch_warnings():  # SQLAlchemy warns too: owner_id is part of the primary key
        warnings.simplefilter("ignore", SAWarning)
        assert loose_of(insert(memory_revisions).values(memory_id="x", revision=1, scope="s")) == {
            ("memory_revisions", "owner_id")}
    assert judge(text("DELETE FROM memories WHERE id = :id"), "DELETE FROM memories WHERE id = ?")[1] == people("memories")


def test_a_crossing_allows_its_own_statement_only() -> None:
    def sent(origin: str, loose: Loose) -> Statement:
        return Statement("SELECT", loose, frozenset({"memories"}), (origin, "store.SqlStore.other"), "")

    assert sent("store.SqlStore.places", people("memories")).allowed_by() is not None
    assert sent("store.SqlStore.places", people("memories", "memory_revisions")).allowed_by() is None
    assert sent("transaction.SqlTx.list", people("memories")).allowed_by() is None


@pytest.mark.parametrize("engine_fixture", ["sqlite_engine", pytest.param("pg_engine", marks=pytest.mark.postgres)])
def test_key_rotation_writes_each_row_in_its_own_place(engine_fixture: str, request: pytest.FixtureRequest) -> None:
    """`rotate-keys` pages through every person's rows (maintenance, by the owner-led keys), and
    each of its writes is pinned to the row's owner and scope."""
    from portal.adapters.cipher import FernetCipher, generate_key
    from portal.adapters.sql.rotation import rotate_keys
    from portal.domain.types import Place
    from portal.services.memory_service import MemoryService

    engine: Engine = request.getfixturevalue(engine_fixture)
    old, new = generate_key(), generate_key()
    for owner in ("ada", "bob"):
        service = MemoryService(SqlStore(engine, cipher=FernetCipher([old])))
        saved = service.remember(Place(owner, "s"), f"{owner} keeps bees")
        service.update(Place(owner, "s"), saved.memory.id, text=f"{owner} keeps two hives")
    both = FernetCipher([new, old])
    with sent_to(engine) as sent:
        counts = rotate_keys(SqlStore(engine, cipher=both), both, batch=1)
    assert (counts.memories, counts.revisions) == (2, 2)
    seen = [s for s in sent if s.touched]
    updates = [s.loose for s in seen if s.kind == "UPDATE"]
    assert len(updates) == 4 and all(loose == frozenset() for loose in updates), updates
    assert {s.loose for s in seen if s.kind == "SELECT"} <= {
        people("memories"), people("memory_revisions"), people("idempotency_receipts"), people("consolidation_jobs")}
