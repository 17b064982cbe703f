"""The in-memory store's twin of `portal.adapters.sql.conversations`: which memories each
conversation of each app was given, first and last; a mixin of its transaction."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from portal.adapters.memory.places import _PlaceData
from portal.domain.apps import Conversation, ConversationCount


class PlaceConversations:
    _data: _PlaceData
    _w: Any  # given by the transaction

    def record_conversation(self, app_id: str, conversation: str, memory_ids: Sequence[str], at: datetime) -> None:
        if not memory_ids:
            return
        kept = self._w().conversations
        for memory_id in dict.fromkeys(memory_ids):
            before = kept.get((app_id, conversation, memory_id))
            kept[(app_id, conversation, memory_id)] = (before[0] if before else at, at)

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
