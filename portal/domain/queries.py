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
    # Only what this app may receive ("don't use this": `Memory.usable_by`); None: everything.
    app: str | None = None
    # Only what is still kept at this moment (`Memory.alive_at`); a store fills it with its own
    # clock when it is None, so that no read answers an expired memory.
    alive_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Cursor:
    """Keyset position: the listing continues strictly after (older than) this memory."""

    created_at: datetime
    id: str


@dataclass(frozen=True, slots=True)
class Settings:
    paused: bool = False
    # The person's "forget what the assistant learns after N days unless pinned": None follows
    # the tenant's default, 0 is never.
    learnt_days: int | None = None


@dataclass(frozen=True, slots=True)
class NeedsVector:
    """A memory that `reindex` should embed: no vector, or one of another model."""

    place: Place
    id: str
    revision: int
    text: str
    updated_at: datetime
