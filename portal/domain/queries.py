"""The values a store is asked with and answers besides memories: filters, a listing's position,
a place's settings, a memory that needs a vector."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from portal.domain.types import Place


@dataclass(frozen=True, slots=True)
class Filters:
    """Narrowing shared by list, recall and the vector and word searches."""

    state: str | None = "active"
    kinds: tuple[str, ...] | None = None
    channel: str | None = None
    seen: bool | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    pinned: bool | None = None


@dataclass(frozen=True, slots=True)
class Cursor:
    """Keyset position: the listing continues strictly after (older than) this memory."""

    created_at: datetime
    id: str


@dataclass(frozen=True, slots=True)
class Settings:
    paused: bool = False


@dataclass(frozen=True, slots=True)
class NeedsVector:
    """A memory that `reindex` should embed: no vector, or one of another model."""

    place: Place
    id: str
    revision: int
    text: str
    updated_at: datetime
