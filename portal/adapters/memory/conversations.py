"""Connected apps in a place of the in-memory store: what the person decided about each app, the
apps' uses, and which memories each conversation of each app was given (the twin of
`portal.adapters.sql.conversations`); a mixin of its transaction."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime
from typing import Any

from portal.adapters.memory.places import _PlaceData
from portal.domain.apps import REMEMBERED, AppUse, Conversation, ConversationCount
from portal.domain.uses import UseBatch


class PlaceConversations:
    _data: _PlaceData
    _w: Any  # given by the transaction
    now: datetime  # given by the transaction

    def app_control(self, app_id: str) -> str | None:
        return self._data.controls.get(app_id)

    def app_controls(self) -> dict[str, str]:
        return dict(self._data.controls)

    def set_app_control(self, app_id: str, state: str | None, at: datetime) -> bool:
        if self._data.controls.get(app_id) == state:
            return False
        controls = self._w().controls
        if state is None:
            controls.pop(app_id, None)
        else:
            controls[app_id] = state
        return True

    def record_use(self, app_id: str, action: str, memory_ids: Sequence[str], at: datetime) -> None:
        if memory_ids:
            self.apply_uses(UseBatch.of(memory_ids, at, app_id, action))

    def apply_uses(self, batch: UseBatch) -> None:
        """As the SQL store's: the hits' use times (active, kept, never back in time), the apps'
        counts added, the conversations' first and last times; the caller keeps it to the memories
        still there."""
        if not batch:
            return
        data = self._w()
        for memory_id, at in batch.used.items():
            m = data.memories.get(memory_id)
            if m is not None and m.state == "active" and m.alive_at(self.now) and (
                    m.last_used_at is None or m.last_used_at < at):
                data.memories[memory_id] = replace(m, last_used_at=at)
        for (app_id, memory_id, action, day), (count, last) in batch.counts.items():
            before = data.uses.get((app_id, memory_id, action, day))
            data.uses[(app_id, memory_id, action, day)] = AppUse(
                app_id, memory_id, action, day, (before.count if before else 0) + count,
                max(before.last_at, last) if before else last)
        for key, (first, last) in batch.served.items():
            was = data.conversations.get(key)
            data.conversations[key] = (min(was[0], first), max(was[1], last)) if was else (first, last)

    def app_uses(self, memory_id: str | None = None) -> builtins.list[AppUse]:
        found = [u for u in self._data.uses.values() if memory_id is None or u.memory_id == memory_id]
        return sorted(found, key=lambda u: (-u.last_at.timestamp(), u.app_id, u.memory_id, u.action))

    def writers(self, memory_ids: Sequence[str]) -> dict[str, str]:
        wanted = set(memory_ids)
        found: dict[str, tuple[date, str]] = {}
        for (app_id, memory_id, action, day) in self._data.uses:
            if action == REMEMBERED and memory_id in wanted and (memory_id not in found or (day, app_id) < found[memory_id]):
                found[memory_id] = (day, app_id)
        return {memory_id: app_id for memory_id, (_day, app_id) in found.items()}

    def record_conversation(self, app_id: str, conversation: str, memory_ids: Sequence[str], at: datetime) -> None:
        if memory_ids:
            self.apply_uses(UseBatch(served={(app_id, conversation, m): (at, at) for m in memory_ids}))

    def conversations(self, limit: int = 50) -> builtins.list[Conversation]:
        grouped: dict[tuple[str, str], list[tuple[str, datetime, datetime]]] = {}
        for (app_id, key, memory_id), (first, last) in self._data.conversations.items():
            grouped.setdefault((app_id, key), []).append((memory_id, first, last))
        found = [Conversation(app_id, key, min(f for _, f, _ in rows), max(t for _, _, t in rows),
                              tuple(m for m, _, _ in sorted(rows, key=lambda r: (-r[2].timestamp(), r[0]))))
                 for (app_id, key), rows in grouped.items()]
        found.sort(key=lambda c: (-c.last_at.timestamp(), c.app_id, c.key))
        return found[:limit]

    def conversation_counts(self, memory_id: str) -> builtins.list[ConversationCount]:
        by_app: dict[str, list[datetime]] = {}
        for (app_id, _key, used), (_first, last) in self._data.conversations.items():
            if used == memory_id:
                by_app.setdefault(app_id, []).append(last)
        counts = [ConversationCount(app_id, len(times), max(times)) for app_id, times in by_app.items()]
        return sorted(counts, key=lambda c: (-c.last_at.timestamp(), c.app_id))
