"""The writes of one transaction on one place of the SQL store: inserting, saving, undoing and
removing memories, their states and marks, and the conversion of a memory to its row. Each notes
on the transaction whether it changed what recall ranks (`changed`) or erased text (`erased`). A
mixin of `SqlTx`, which gives it `conn`, `place`, `bound`, `store`, `here` and the conversion of
rows back to memories and revisions."""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import RowMapping
from sqlalchemy.sql.elements import ColumnElement

from portal.adapters.sql.engine import place_lock_key
from portal.adapters.sql.statements import (
    INSERT_COUNTING,
    MARK_USED,
    MARK_USED_PG,
    app_pattern,
    could_be_id,
    pg_vector,
    sources_json,
)
from portal.adapters.sql.tables import conversation_uses, memories, memory_revisions
from portal.adapters.sql.tx_state import PlaceTxState
from portal.domain.decisions import withheld_json
from portal.domain.text import search_text
from portal.domain.types import Memory, Revision

M = memories.c
R = memory_revisions.c


class PlaceWriting(PlaceTxState):
    # Given by `PlaceRecords` and `SqlTx`.
    now: datetime
    here: Callable[..., ColumnElement[bool]]
    _memory: Callable[[RowMapping], Memory]
    _revision: Callable[[RowMapping], Revision]
    forget_taught: Callable[[Sequence[str] | None], None]

    def insert(self, memory: Memory) -> int:
        # One statement: inserted unless the id is tombstoned here, and the count rides on it
        # (under the cap's threshold the cap costs no query).
        values = {f"new_{k}": v for k, v in self._row(memory).items()}
        before = self.conn.execute(INSERT_COUNTING, {**values, **self.bound}).scalar_one_or_none()
        if before is None:
            raise ValueError("id already used")
        self.changed = True
        # RETURNING sees the snapshot before the insert on PostgreSQL, after it on SQLite.
        return int(before) + (1 if self.store.postgres and memory.state == "active" else 0)

    def save(self, memory: Memory, expected_revision: int) -> bool:
        row = self._row(memory)
        # The WHERE names the place, and a memory never moves: its owner (the column a sharded schema is
        # distributed by, docs/operations.md) and scope are not written again.
        for kept in ("id", "owner_id", "scope", "created_at"):
            row.pop(kept)
        done = self.conn.execute(
            update(memories).where(self.here(), M.id == memory.id, M.revision == expected_revision).values(**row)
        ).rowcount
        self.changed = self.changed or bool(done)
        # An in-place edit overwrote a wording, an undo took one back: both are erasures.
        if done and memory.last_op in ("in_place", "undo"):
            self.erased.add("memories")
            self.forget_taught([memory.id])
        return bool(done)

    def push_revision(self, revision: Revision) -> None:
        e = revision.embedding
        self.conn.execute(
            insert(memory_revisions).values(
                memory_id=revision.memory_id, revision=revision.revision, owner_id=self.place.owner_id,
                scope=self.place.scope, text=self.store.encrypt(revision.text), kind=revision.kind,
                importance=revision.importance, origin=revision.origin, sources=sources_json(revision.sources),
                op=revision.op, written_at=revision.written_at, expires_at=revision.expires_at,
                embedding_model=e.model if e else None, embedding=e.vector if e else None,
            )
        )

    def pop_revision(self, memory_id: str) -> Revision | None:
        row = self.conn.execute(
            select(memory_revisions).where(self.here(memory_revisions), R.memory_id == memory_id)
            .order_by(R.revision.desc()).limit(1)
        ).mappings().first()
        if row is None:
            return None
        self.conn.execute(
            delete(memory_revisions).where(
                self.here(memory_revisions), R.memory_id == memory_id, R.revision == row["revision"]
            )
        )
        self.erased.add("memory_revisions")
        return self._revision(row)

    def erase_history(self, memory_id: str) -> int:
        if not could_be_id(memory_id):
            return 0
        erased = self.conn.execute(
            delete(memory_revisions).where(self.here(memory_revisions), R.memory_id == memory_id)
        ).rowcount
        if erased:
            self.erased.add("memory_revisions")
            self.forget_taught([memory_id])
        return int(erased)

    def remove(self, ids: Sequence[str]) -> tuple[int, int]:
        wanted = list({i for i in ids if could_be_id(i)})
        if not wanted:
            return 0, 0
        revisions = self.conn.execute(
            delete(memory_revisions).where(self.here(memory_revisions), R.memory_id.in_(wanted))
        ).rowcount
        removed = self.conn.execute(delete(memories).where(self.here(), M.id.in_(wanted))).rowcount
        self.conn.execute(delete(conversation_uses).where(self.here(conversation_uses),
                                                          conversation_uses.c.memory_id.in_(wanted)))
        self._erased_rows(removed, revisions)
        if removed:
            self.forget_taught(wanted)
        return removed, revisions

    def remove_all(self) -> tuple[int, int]:
        revisions = self.conn.execute(delete(memory_revisions).where(self.here(memory_revisions))).rowcount
        removed = self.conn.execute(delete(memories).where(self.here())).rowcount
        self.conn.execute(delete(conversation_uses).where(self.here(conversation_uses)))
        self._erased_rows(removed, revisions)
        if removed:
            self.forget_taught(None)
        return removed, revisions

    def _erased_rows(self, memories_: int, revisions: int) -> None:
        self.changed = self.changed or bool(memories_)
        if memories_:
            self.erased.add("memories")
        if revisions:
            self.erased.add("memory_revisions")


    def set_state(self, ids: Sequence[str], state: str) -> int:
        if not ids:
            return 0
        done = self.conn.execute(
            update(memories).where(self.here(), M.id.in_(list(ids)), M.state != state).values(state=state)
        ).rowcount
        self.changed = self.changed or bool(done)
        return done

    def mark_used(self, ids: Sequence[str], at: datetime) -> int:
        wanted = list({i for i in ids if could_be_id(i)})
        if not wanted:
            return 0
        return self.conn.execute(
            update(memories).where(self.here(), M.id.in_(wanted), M.state == "active").values(last_used_at=at)
        ).rowcount

    def mark_used_returning(self, ids: Sequence[str], at: datetime, app_id: str | None = None) -> builtins.list[Memory]:
        """Mark them used and read them back, those alive and (for an app) usable by it only."""
        wanted = list(dict.fromkeys(i for i in ids if could_be_id(i)))
        if not wanted:
            return []
        values = {**self.bound, "ids": wanted, "used_at": at, "now": self.now, "everyone": app_id is None,
                  "app_pattern": app_pattern(app_id)}
        if self.store.postgres:
            values["lock_key"] = place_lock_key(self.place.owner_id, self.place.scope)
        if self.store.postgres:
            rows: Any = [
                {**r, "embedding": None if r["embedding_sent"] is None else pg_vector(r["embedding_sent"])}
                for r in self.conn.execute(MARK_USED_PG, values).mappings()
            ]
        else:
            rows = self.conn.execute(MARK_USED, values).mappings().all()
        by_id = {r["id"]: self._memory(r) for r in rows}
        return [by_id[i] for i in wanted if i in by_id]

    def mark_seen(self, ids: Sequence[str]) -> int:
        wanted = list({i for i in ids if could_be_id(i)})
        if not wanted:
            return 0
        return self.conn.execute(
            update(memories).where(self.here(), M.id.in_(wanted), M.seen.is_(False)).values(seen=True)
        ).rowcount

    # ---------------------------------------------------------------- rows

    def _row(self, m: Memory) -> dict[str, Any]:
        e = m.embedding
        return {
            "id": m.id, "owner_id": self.place.owner_id, "scope": self.place.scope, "revision": m.revision,
            "text": self.store.encrypt(m.text),
            "search_text": search_text(m.text) if self.store.searches_text else None,
            "words_key": m.words_key, "kind": m.kind, "importance": m.importance, "role": m.role,
            "origin": m.origin, "sources": sources_json(m.sources), "channel": m.channel, "seen": m.seen,
            "pinned": m.pinned, "state": m.state, "last_op": m.last_op, "created_at": m.created_at,
            "updated_at": m.updated_at, "last_used_at": m.last_used_at,
            "embedding_model": e.model if e else None, "embedding_dim": e.dim if e else None,
            "embedding": e.vector if e else None,
            "attributes": self.store.encrypt(json.dumps(m.attributes, ensure_ascii=False)) if m.attributes else None,
            "expires_at": m.expires_at, "withheld": withheld_json(m.withheld),
        }

