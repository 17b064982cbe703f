"""The statements of every remember and recall, built once (building one costs more than running it
on SQLite), with the place and the values as bound parameters; and the conversions of rows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import (
    Boolean,
    LargeBinary,
    String,
    and_,
    bindparam,
    exists,
    func,
    insert,
    literal,
    select,
    text,
    type_coerce,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.elements import ColumnElement

from portal.adapters.sql.tables import (
    app_controls,
    app_uses,
    memories,
    memory_places,
    memory_revisions,
    memory_settings,
    memory_tombstones,
)
from portal.domain.options import utc_now
from portal.domain.types import Source

M = memories.c
R = memory_revisions.c


def bound_place(table: Any) -> ColumnElement[bool]:
    return and_(table.c.owner_id == bindparam("place_owner"), table.c.scope == bindparam("place_scope"))


def new_token(upsert: Any) -> Any:
    statement = upsert(memory_places).values(
        owner_id=bindparam("place_owner"), scope=bindparam("place_scope"), token=bindparam("token")
    )
    return statement.on_conflict_do_update(index_elements=["owner_id", "scope"], set_={"token": statement.excluded.token})


# Statements run on every remember or recall, built once (building one costs more than running it
# on SQLite); the place and values come as bound parameters.


def alive() -> ColumnElement[bool]:
    """Still kept at the bound `now`: no read answers a memory past its expiry (Memory.alive_at)."""
    return M.expires_at.is_(None) | (M.expires_at > bindparam("now", type_=M.expires_at.type))


def app_pattern(app_id: str | None) -> str:
    """The LIKE pattern finding an app id as an element of `withheld` (a JSON list, as
    `portal.domain.decisions.withheld_json` writes it): its JSON string, quotes included, wildcards
    escaped, right after the list's "[" or an element's ", " (the pattern starts with "%"; the
    statement tries it also with the "[" in place of the "% "). Inside a JSON string every quote is
    escaped, so a quote after "[" or a space opens an element and the id is matched exactly: a
    memory withheld from 'a"b' is not withheld from 'b'. For no app (the person), one that matches
    nothing kept."""
    if app_id is None:
        return ""
    quoted = json.dumps(app_id).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"% {quoted}%"


def _withheld_from(pattern: Any) -> ColumnElement[bool]:
    """`withheld` holds the app `pattern` (an `app_pattern`) as its first element or a later one."""
    first = "[" + pattern[2:] if isinstance(pattern, str) else literal("[") + func.substr(pattern, 3)
    return M.withheld.like(first, escape="\\") | M.withheld.like(pattern, escape="\\")


EVERY_APP_PATTERN = app_pattern("*")


def usable_by(app_id: str | None) -> ColumnElement[bool]:
    """What this app may receive. For a statement built once (`app_id` None), the app comes bound:
    `everyone` true for the person (who receives all they keep), else `app_pattern`."""
    if app_id is None:
        return (bindparam("everyone", type_=Boolean()) | M.withheld.is_(None)
                | ~(_withheld_from(EVERY_APP_PATTERN) | _withheld_from(bindparam("app_pattern", type_=String()))))
    return M.withheld.is_(None) | ~(_withheld_from(EVERY_APP_PATTERN) | _withheld_from(app_pattern(app_id)))


GET = select(memories).where(bound_place(memories), M.id == bindparam("memory_id"), alive())
GET_MANY = select(memories).where(bound_place(memories), M.id.in_(bindparam("ids", expanding=True)), alive())
FIND_WORDS = select(memories).where(
    bound_place(memories), M.state == "active", M.words_key == bindparam("words_key"), alive()).order_by(
    M.created_at, M.id)
TOMBSTONED = select(literal(1)).where(
    bound_place(memory_tombstones), memory_tombstones.c.memory_id == bindparam("memory_id")
)
PAUSED = select(memory_settings.c.paused, memory_settings.c.learnt_days).where(bound_place(memory_settings))
NEW_TOKEN_PG = new_token(pg_insert)
NEW_TOKEN_SQLITE = new_token(sqlite_insert)

# Connected apps: what the person decided about an app, which ids are there, and one more use.
APP_CONTROL = select(app_controls.c.state).where(bound_place(app_controls), app_controls.c.app_id == bindparam("app_id"))
PRESENT = select(memories.c.id).where(bound_place(memories), memories.c.id.in_(bindparam("ids", expanding=True)))


def use_upsert(upsert: Any, latest: Any) -> Any:
    """`count` more uses (several at once from a batch of them) and the latest time of any (batches
    of several workers land in any order)."""
    u = app_uses.c
    statement = upsert(app_uses).values(
        owner_id=bindparam("place_owner"), scope=bindparam("place_scope"), app_id=bindparam("app_id"),
        memory_id=bindparam("memory_id"), action=bindparam("action"), day=bindparam("day"),
        count=bindparam("count", type_=u.count.type), last_at=bindparam("last_at", type_=u.last_at.type),
    )
    return statement.on_conflict_do_update(
        index_elements=[u.owner_id, u.scope, u.app_id, u.memory_id, u.action, u.day],
        set_={"count": u.count + statement.excluded.count, "last_at": latest(u.last_at, statement.excluded.last_at)},
    )


USE_UPSERT_PG = use_upsert(pg_insert, func.greatest)
USE_UPSERT_SQLITE = use_upsert(sqlite_insert, func.max)  # SQLite's max() of two arguments is the greater
# Recall's hits marked used by a batch (one row each, its own time): only the active ones still kept
# and never back in time (a later batch of another worker may have landed first).
MARK_USED_AT = (
    update(memories)
    .where(bound_place(memories), M.id == bindparam("memory_id"), M.state == "active", alive(),
           M.last_used_at.is_(None) | (M.last_used_at < bindparam("used_at", type_=M.last_used_at.type)))
    .values(last_used_at=bindparam("used_at"))
)

TOKEN = select(memory_places.c.token).where(bound_place(memory_places))
MARK_USED = (
    update(memories)
    .where(bound_place(memories), M.id.in_(bindparam("ids", expanding=True)), M.state == "active", alive(),
           usable_by(None))
    .values(last_used_at=bindparam("used_at"))
    .returning(*memories.c)
)
# PostgreSQL, in one round trip (a statement of its own, autocommit):
# - the place's advisory lock first, in a subquery evaluated once (an InitPlan) before any row is
#   updated, so that its rows are locked only once no write to the place is running: a write
#   holding one of them and wanting another would otherwise deadlock with it;
# - `synchronous_commit` off for its own transaction only (set_config's third argument), so it
#   does not wait for the WAL to reach the disk: a use time is a hint, and a crash losing the
#   last ones costs nothing that matters. Made in the WHERE clause: for every row written.
PLACE_LOCK = select(literal(1)).select_from(
    select(func.pg_advisory_xact_lock(func.hashtextextended(bindparam("lock_key"), 0)).label("lock")).subquery()
).scalar_subquery()
# A place's write lock for the rest of the transaction, which will not wait for durability (what it
# writes is a count of uses: a crash losing the last few costs nothing that matters).
LOCK_NOT_DURABLE = text(
    "SELECT pg_advisory_xact_lock(hashtextextended(:key, 0)), set_config('synchronous_commit', 'off', true)"
)
# The vector comes back in pgvector's binary form (see `pg_vector`), not as text to parse.
MARK_USED_PG = (
    update(memories)
    .where(
        bound_place(memories), M.id.in_(bindparam("ids", expanding=True)), M.state == "active", alive(),
        usable_by(None), PLACE_LOCK == 1, func.set_config("synchronous_commit", "off", True).is_not(None),
    )
    .values(last_used_at=bindparam("used_at"))
    .returning(
        *[c for c in memories.c if c.name != "embedding"],
        type_coerce(func.vector_send(M.embedding), LargeBinary).label("embedding_sent"),
    )
)


def pg_vector(sent: bytes) -> np.ndarray:
    """A vector from pgvector's binary form (`vector_send`): a 4-byte header (dimensions, unused),
    then big-endian float4. Reading it takes microseconds; the text form took 40 µs a vector."""
    return np.frombuffer(sent, dtype=">f4", offset=4).astype(np.float32)

# Built once: a statement made per call with .values(...) costs more to build than to run on SQLite.
INSERT_COUNTING = (
    insert(memories)
    .from_select(
        [c.name for c in memories.c],
        select(*[bindparam(f"new_{c.name}", type_=c.type) for c in memories.c]).where(
            ~exists().where(bound_place(memory_tombstones), memory_tombstones.c.memory_id == bindparam("new_id"))
        ),
    )
    .returning(select(func.count()).where(bound_place(memories), M.state == "active").scalar_subquery())
)


def could_be_id(value: object) -> bool:
    """Whether a value could be a stored id: ids come from callers (URLs, JSON), and a string the
    database cannot even be sent (a NUL, a lone surrogate from a JSON escape) names nothing."""
    if not isinstance(value, str) or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sources_json(sources: Sequence[Source]) -> str:
    return json.dumps([s.to_json() for s in sources])


def sources_of(raw: str) -> tuple[Source, ...]:
    return tuple(Source.from_json(s) for s in json.loads(raw or "[]"))


def now() -> datetime:
    return utc_now()
