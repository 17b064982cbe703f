"""What the API answers, as typed dataclasses; times are timezone-aware datetimes (UTC)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


def parse_time(value: str) -> datetime:
    """An RFC 3339 time as an aware datetime (a time without offset is taken as UTC)."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Source:
    """Where a memory came from: `portal`, `api`, `tool`, `consolidation` (with `ref` and messages) or `import`."""

    kind: str
    ref: str | None = None
    messages: tuple[int, ...] = ()

    @classmethod
    def of(cls, data: dict[str, Any]) -> Source:
        return cls(data["kind"], data.get("ref"), tuple(data.get("messages") or ()))


@dataclass(frozen=True, slots=True)
class Memory:
    """The current revision of one memory; `id` stays the same for its whole life."""

    id: str
    revision: int
    text: str
    kind: str
    importance: int
    pinned: bool
    origin: str
    sources: tuple[Source, ...]
    channel: str
    seen: bool
    state: str
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None
    has_vector: bool
    expires_at: datetime | None = None  # when it is forgotten; None: kept until forgotten
    use: bool = True  # False: the person said "don't use this", no app receives it

    @property
    def etag(self) -> str:
        """The ETag the API gives this revision; `update(..., if_revision=memory.revision)` sends it back."""
        return f'"{self.revision}"'

    @classmethod
    def of(cls, data: dict[str, Any]) -> Memory:
        return cls(
            id=data["id"], revision=data["revision"], text=data["text"], kind=data["kind"],
            importance=data["importance"], pinned=data["pinned"], origin=data["origin"],
            sources=tuple(Source.of(s) for s in data.get("sources", ())), channel=data["channel"],
            seen=data["seen"], state=data.get("state", "active"), created_at=parse_time(data["created_at"]),
            updated_at=parse_time(data["updated_at"]),
            last_used_at=parse_time(data["last_used_at"]) if data.get("last_used_at") else None,
            has_vector=data["has_vector"],
            expires_at=parse_time(data["expires_at"]) if data.get("expires_at") else None,
            use=data.get("use", True) is not False,
        )


@dataclass(frozen=True, slots=True)
class Saved:
    """A kept write: `replaced_id` when it replaced a duplicate (same id, new revision), `reinforced`
    when it met one and only raised its importance; `replayed` when the answer is a stored one."""

    memory: Memory
    replaced_id: str | None
    reinforced: bool
    replayed: bool = False


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing, newest first; `next_cursor` is None on the last page."""

    items: list[Memory]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class Revision:
    """One wording of a memory, as its history shows it (the current one first)."""

    id: str
    revision: int
    text: str
    kind: str
    importance: int
    origin: str
    sources: tuple[Source, ...]
    written_at: datetime

    @classmethod
    def of(cls, data: dict[str, Any]) -> Revision:
        return cls(data["id"], data["revision"], data["text"], data["kind"], data["importance"], data["origin"],
                   tuple(Source.of(s) for s in data.get("sources", ())), parse_time(data["written_at"]))


@dataclass(frozen=True, slots=True)
class Hit:
    """One recall result: the memory, its fused score and how it was found (`vector`, `lexical`, `hybrid`)."""

    memory: Memory
    score: float
    match: str


@dataclass(frozen=True, slots=True)
class Portrait:
    """Text for a system prompt, and the ids of the memories it holds (pinned, then important ones);
    `left_out` counts the person's other memories, which recall finds."""

    text: str
    ids: list[str]
    left_out: int = 0


@dataclass(frozen=True, slots=True)
class ConsolidationResult:
    """What a consolidation did: `status` is done, already, paused, empty, unavailable, failed or
    temporary (marked temporary: nothing learnt, nothing kept)."""

    status: str
    added: int
    corrected: int
    refused: int
    summary: str | None
    reason: str | None = None
    failed: int | None = None
    proposed: int | None = None
    reinforced: int = 0

    @classmethod
    def of(cls, data: dict[str, Any]) -> ConsolidationResult:
        return cls(data["status"], data["added"], data["corrected"], data["refused"], data.get("summary"),
                   data.get("reason"), data.get("failed"), data.get("proposed"), data.get("reinforced", 0))


@dataclass(frozen=True, slots=True)
class Export:
    """Everything kept about a person in the key's tenant: memories (with their revisions) and settings."""

    owner_id: str
    scope: str
    exported_at: datetime
    paused: bool
    memories: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class PurgeCounts:
    """What erasing a person removed."""

    memories: int
    revisions: int
    settings: int
    refs: int
    receipts: int
    tombstones: int = 0


@dataclass(frozen=True, slots=True)
class ForgetPreview:
    """What a subject matches (at most 200, the most relevant first), the token that confirms them,
    and whether more matched than are listed."""

    items: list[Memory]
    preview: str
    more: bool


@dataclass(frozen=True, slots=True)
class ForgotMatching:
    """What a confirmed forget by subject did: the ids forgotten, those kept because they changed
    since the preview, and those gone already."""

    memories: int
    revisions: int
    forgotten: list[str]
    changed: list[str]
    gone: list[str]
