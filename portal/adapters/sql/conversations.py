"""Which memories the assistant was given in which conversation of which app (issue 29): one row
per conversation and memory, its first and last time. Content-free: the conversation is a digest
of the assistant's reference. A mixin of `SqlTx` (its `conn`, `place`, `bound` and `store`)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.elements import ColumnElement

from portal.adapters.sql.statements import MARK_USED_AT, USE_UPSERT_PG, USE_UPSERT_SQLITE
from portal.adapters.sql.tables import conversation_uses
from portal.adapters.sql.tx_state import PlaceTxState
from portal.domain.apps import Conversation, ConversationCount
from portal.domain.uses import UseBatch

C = conversation_uses.c


def _upsert(upsert: Any, least: Any, greatest: Any) -> Any:
    """The earliest first time and the latest last one (batches of several workers land in any order)."""
    statement = upsert(conversation_uses).values(
        owner_id=bindparam("place_owner"), scope=bindparam("place_scope"), app_id=bindparam("app_id"),
        conversation=bindparam("conversation"), memory_id=bindparam("memory_id"),
        first_at=bindparam("first_at", type_=C.first_at.type), last_at=bindparam("last_at", type_=C.last_at.type),
    )
    return statement.on_conflict_do_update(
        index_elements=[C.owner_id, C.scope, C.app_id, C.conversation, C.memory_id],
        set_={"first_at": least(C.first_at, statement.excluded.first_at),
              "last_at": greatest(C.last_at, statement.excluded.last_at)},
    )


UPSERT_PG = _upsert(pg_insert, func.least, func.greatest)
UPSERT_SQLITE = _upsert(sqlite_insert, func.min, func.max)  # SQLite's min() and max() of two arguments


class PlaceConversations(PlaceTxState):
    here: Any  # given by PlaceRecords

    def record_use(self, app_id: str, action: str, memory_ids: Sequence[str], at: datetime) -> None:
        self.apply_uses(UseBatch.of(memory_ids, at, app_id, action))

    def record_conversation(self, app_id: str, conversation: str, memory_ids: Sequence[str], at: datetime) -> None:
        self.apply_uses(UseBatch(served={(app_id, conversation, m): (at, at) for m in memory_ids}))

    def apply_uses(self, batch: UseBatch) -> None:
        """A batch of uses (`portal.domain.uses`), a few statements whatever its size: the hits'
        use times, the apps' counts, the conversations served; the caller keeps it to the memories
        still there (`SqlStore.record_batch`, under the place's lock)."""
        if batch.used:
            self.conn.execute(MARK_USED_AT, [{**self.bound, "memory_id": m, "used_at": at, "now": self.now}
                                             for m, at in batch.used.items()])
        if batch.counts:
            self.conn.execute(USE_UPSERT_PG if self.store.postgres else USE_UPSERT_SQLITE, [
                {**self.bound, "app_id": app_id, "memory_id": m, "action": action, "day": day.isoformat(),
                 "count": count, "last_at": last} for (app_id, m, action, day), (count, last) in batch.counts.items()])
        if batch.served:
            self.conn.execute(UPSERT_PG if self.store.postgres else UPSERT_SQLITE, [
                {**self.bound, "app_id": app_id, "conversation": conversation, "memory_id": m, "first_at": first,
                 "last_at": last} for (app_id, conversation, m), (first, last) in batch.served.items()])

    def conversations(self, limit: int = 50) -> builtins.list[Conversation]:
        where: ColumnElement[bool] = self.here(conversation_uses)
        latest = (select(C.app_id, C.conversation, func.min(C.first_at).label("first_at"),
                         func.max(C.last_at).label("last_at"))
                  .where(where).group_by(C.app_id, C.conversation)
                  .order_by(func.max(C.last_at).desc(), C.app_id, C.conversation).limit(limit))
        found = self.conn.execute(latest).all()
        if not found:
            return []
        wanted = {(r.app_id, r.conversation) for r in found}
        members: dict[tuple[str, str], list[tuple[datetime, str]]] = {}
        rows = self.conn.execute(select(C.app_id, C.conversation, C.memory_id, C.last_at).where(
            where, C.conversation.in_([r.conversation for r in found])))
        for app_id, conversation, memory_id, last_at in rows:
            if (app_id, conversation) in wanted:
                members.setdefault((app_id, conversation), []).append((last_at, memory_id))
        return [Conversation(r.app_id, r.conversation, r.first_at, r.last_at,
                             tuple(m for _, m in sorted(members.get((r.app_id, r.conversation), []),
                                                        key=lambda pair: (-pair[0].timestamp(), pair[1]))))
                for r in found]

    def conversation_counts(self, memory_id: str) -> builtins.list[ConversationCount]:
        rows = self.conn.execute(
            select(C.app_id, func.count().label("n"), func.max(C.last_at).label("last_at"))
            .where(self.here(conversation_uses), C.memory_id == memory_id).group_by(C.app_id)
            .order_by(func.max(C.last_at).desc(), C.app_id))
        return [ConversationCount(r.app_id, int(r.n), r.last_at) for r in rows]
