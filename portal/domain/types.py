"""Domain types of the memory service: places, memories, revisions, outcomes and errors.

Plain dataclasses with no framework or database in sight; every layer above and below speaks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

import numpy as np

from portal.domain.errors import (  # the error family, named with the types it speaks of
    Conflict,
    InvalidArgument,
    InvalidWhere,
    MemoryServiceError,
    NotFound,
    Refused,
)
from portal.inputs import MAX_ID_LENGTH, is_valid_id, is_valid_text

__all__ = ["Conflict", "InvalidArgument", "InvalidWhere", "MemoryServiceError", "NotFound", "Refused"]

Origin = Literal["asserted", "inferred"]
Channel = Literal["foreground", "background"]
Match = Literal["vector", "lexical", "hybrid"]

ORIGINS = ("asserted", "inferred")
CHANNELS = ("foreground", "background")
STATES = ("active", "archived")


@dataclass(frozen=True, slots=True)
class Place:
    """Where a memory lives: one owner (the person) in one scope (tenant, workspace or "")."""

    owner_id: str
    scope: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.owner_id, str) or not self.owner_id.strip():
            raise InvalidWhere("a place needs an owner_id")
        if not is_valid_id(self.owner_id):
            raise InvalidWhere("an owner_id is 1 to 200 characters, with no control character, \"/\" or dot segment")
        if not isinstance(self.scope, str) or len(self.scope) > MAX_ID_LENGTH or not is_valid_text(self.scope):
            raise InvalidWhere("scope must be a string of at most 200 characters")

    @classmethod
    def of(cls, owner_id: Any, scope: Any = "") -> Place:
        """Build a place from loose input, raising InvalidWhere for a missing owner."""
        if owner_id is None or not isinstance(owner_id, str):
            raise InvalidWhere("a place needs an owner_id")
        return cls(owner_id, "" if scope is None else scope)


@dataclass(frozen=True, slots=True)
class Source:
    """Where a memory came from: `portal`, `api`, `tool`, `consolidation` or `import`."""

    kind: str
    ref: str | None = None
    messages: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        if self.ref is not None:
            data["ref"] = self.ref
        if self.messages:
            data["messages"] = list(self.messages)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Source:
        return cls(
            kind=str(data.get("kind", "api")),
            ref=data.get("ref"),
            messages=tuple(int(i) for i in data.get("messages", ()) or ()),
        )


@dataclass(frozen=True, slots=True)
class Embedding:
    """A vector with the model that made it; vectors of two models are never compared."""

    model: str
    vector: np.ndarray

    @property
    def dim(self) -> int:
        return int(self.vector.shape[0])


def kept_at(expires_at: datetime | None, moment: datetime) -> bool:
    """Whether what expires at `expires_at` (None: never) is still kept at `moment`."""
    return expires_at is None or expires_at > moment


def receivable_by(withheld: Sequence[str], app_id: str | None) -> bool:
    """Whether an app (None: the person) may receive what is withheld from `withheld` ("*": all)."""
    return app_id is None or not withheld or ("*" not in withheld and app_id not in withheld)


@dataclass(slots=True)
class Memory:
    """The current revision of one memory. `id` stays the same for the memory's whole life."""

    id: str
    owner_id: str
    scope: str
    revision: int
    text: str
    kind: str
    importance: int
    created_at: datetime
    updated_at: datetime
    role: str | None = None
    origin: str = "asserted"
    sources: tuple[Source, ...] = ()
    channel: str = "foreground"
    seen: bool = True
    pinned: bool = False
    state: str = "active"
    last_used_at: datetime | None = None
    embedding: Embedding | None = None
    last_op: str = "create"
    words_key: str = ""
    # What a host keeps with it besides its words (portal.domain.attributes): agent, app and run
    # ids, metadata, categories, an expiration date, when it was said. None: nothing.
    attributes: dict[str, Any] | None = None
    # When it is forgotten (None: never): from then on no read answers it, and the sweep erases it
    # as forget erases. Set by the person, by a host when remembering, or by the person's default
    # for what the assistant learns.
    expires_at: datetime | None = None
    # Which apps may not receive it ("don't use this"): () every app may, ("*",) none, else these
    # app ids. The person still sees, searches and downloads it.
    withheld: tuple[str, ...] = ()

    @property
    def place(self) -> Place:
        return Place(self.owner_id, self.scope)

    @property
    def has_vector(self) -> bool:
        return self.embedding is not None

    @property
    def last_useful_at(self) -> datetime:
        """When the memory was last used, or created when never used (the cap and portrait read this)."""
        return self.last_used_at or self.created_at

    def copy(self, **changes: Any) -> Memory:
        return replace(self, **changes)

    def alive_at(self, moment: datetime) -> bool:
        """Whether it is still kept at `moment` (not past its expiry)."""
        return kept_at(self.expires_at, moment)

    def usable_by(self, app_id: str | None) -> bool:
        """Whether this app may receive it (None: the person, who sees everything they keep)."""
        return receivable_by(self.withheld, app_id)

    def to_json(self) -> dict[str, Any]:
        """The public JSON shape (no vector, no internal keys)."""
        return {
            "id": self.id,
            "revision": self.revision,
            "text": self.text,
            "kind": self.kind,
            "importance": self.importance,
            "pinned": self.pinned,
            "origin": self.origin,
            "sources": [s.to_json() for s in self.sources],
            "channel": self.channel,
            "seen": self.seen,
            "state": self.state,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "last_used_at": iso(self.last_used_at) if self.last_used_at else None,
            "has_vector": self.has_vector,
            "attributes": self.attributes,
            "expires_at": iso(self.expires_at) if self.expires_at else None,
            "use": not self.withheld or "*" not in self.withheld,
            "withheld_from": [a for a in self.withheld if a != "*"],
        }


@dataclass(frozen=True, slots=True)
class Revision:
    """One earlier (or the current) wording of a memory, as history shows it."""

    memory_id: str
    revision: int
    text: str
    kind: str
    importance: int
    origin: str
    sources: tuple[Source, ...]
    written_at: datetime
    embedding: Embedding | None = None
    op: str = "create"
    # When this earlier wording is erased (a person's own edit: once its Undo is no longer offered);
    # None: kept until the person erases it or retention does.
    expires_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.memory_id,
            "revision": self.revision,
            "text": self.text,
            "kind": self.kind,
            "importance": self.importance,
            "origin": self.origin,
            "sources": [s.to_json() for s in self.sources],
            "written_at": iso(self.written_at),
        }


@dataclass(frozen=True, slots=True)
class Saved:
    """A write that was kept. `replaced_id` is set when a duplicate was replaced (same id, new revision)."""

    memory: Memory
    replaced_id: str | None = None
    reinforced: bool = False
    ok: Literal[True] = True


@dataclass(frozen=True, slots=True)
class Holding:
    """A consolidation's hold on its conversation, carried by each of its writes and checked inside
    the write: nothing lands once the claim is gone (an erasure, a takeover), and no fact repeats
    word for word a memory the model was shown that was forgotten since (`shown`: words key → id)."""

    ref: str
    holder: str
    shown: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Hit:
    """One recall result: the memory, its fused score and how it was found."""

    memory: Memory
    score: float
    match: str


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing, newest first; `next_cursor` is None on the last page."""

    items: list[Memory]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class PurgeCounts:
    """What `purge_owner` removed, every scope together."""

    memories: int = 0
    revisions: int = 0
    settings: int = 0
    refs: int = 0
    receipts: int = 0
    tombstones: int = 0
    app_uses: int = 0
    app_controls: int = 0
    jobs: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "memories": self.memories,
            "revisions": self.revisions,
            "settings": self.settings,
            "refs": self.refs,
            "receipts": self.receipts,
            "tombstones": self.tombstones,
            "app_uses": self.app_uses,
            "app_controls": self.app_controls,
            "jobs": self.jobs,
        }

    def plus(self, other: PurgeCounts) -> PurgeCounts:
        return PurgeCounts(**{name: getattr(self, name) + getattr(other, name) for name in self.to_json()})


@dataclass(frozen=True, slots=True)
class Receipt:
    """A stored answer to an idempotent write, keyed per place by the caller's key."""

    key: str
    request_hash: str
    status: int
    response: dict[str, Any] | None
    memory_ids: tuple[str, ...] = ()
    created_at: datetime | None = None
    redacted: bool = False
    # While pending: until when its request holds the key (renewed as it runs), and which request
    # does (a random token: one whose lease was taken over cannot finish or drop the new holder's).
    lease_until: datetime | None = None
    holder: str | None = None


@dataclass(frozen=True, slots=True)
class Portrait:
    """The `text` a system prompt is given and its `memories` (`ids`); `no_room`: pinned or important
    ones that did not fit; `left_out` counts every other active memory (recall finds them), so an
    empty text with `left_out` above 0 is "nothing pinned or important enough yet", not "nothing kept"."""

    text: str
    ids: list[str] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list, compare=False)
    no_room: list[Memory] = field(default_factory=list, compare=False)
    left_out: int = field(default=0, compare=False)


def as_place(place: Any) -> Place:
    """A Place from a Place, an (owner_id, scope) pair or a bare owner id; InvalidWhere otherwise."""
    if isinstance(place, Place):
        return place
    if isinstance(place, tuple) and len(place) == 2:
        return Place.of(*place)
    return Place.of(place)


def iso(moment: datetime) -> str:
    """RFC 3339 UTC with a Z, second precision kept to microseconds when present."""
    return moment.isoformat().replace("+00:00", "Z")
