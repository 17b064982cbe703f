"""Request and response models of the JSON API; the OpenAPI document is generated from them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StringConstraints

from portal.domain.types import Memory

Text = Annotated[str, StringConstraints(max_length=10_000)]
Id = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Kind = Annotated[str, StringConstraints(max_length=64)]
# A number (finite: the body parser refuses NaN and infinities) or one of the words the service reads
# ("high", "4"); never a JSON true or false, which lax parsing would read as 1 or 0.
Importance = StrictInt | StrictFloat | Annotated[str, StringConstraints(max_length=64)]
# A JSON body's true or false: 0, 1, "yes" or "false" are refused, not guessed at (query strings
# keep pydantic's reading of "true"/"false"/"1"/"0").
Flag = StrictBool
# Checked by the service, so a bad one is refused 422 with its code (not a schema's 400): a
# conversation reference (1 to 200 printable characters, kept as a digest) and an expiry (RFC 3339).
ConversationRef = Annotated[str | None, Field(None, json_schema_extra={"maxLength": 200}, description=(
    "the assistant's conversation this answer is for (1 to 200 printable characters): the person sees which "
    "memories each conversation was given; kept as a digest, never its words. Else 422 invalid_conversation_ref"))]
Expiry = Annotated[str, StringConstraints(max_length=64), Field(json_schema_extra={"format": "date-time"})]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Problem(BaseModel):
    """application/problem+json (RFC 9457) with a stable `code`."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    code: str
    actual_revision: int | None = None


class Redacted(BaseModel):
    """A write replayed for its Idempotency-Key after its memory was forgotten, corrected, overwritten
    in place or undone: it was applied once, and what it answered is no longer kept (header
    `Idempotent-Replayed: true`)."""

    redacted: Literal[True]


class SourceOut(BaseModel):
    kind: str
    ref: str | None = None
    messages: list[int] = []


class MemoryOut(BaseModel):
    id: str
    revision: int
    text: str
    kind: str
    importance: int
    pinned: bool
    origin: Literal["asserted", "inferred"]
    sources: list[SourceOut]
    channel: Literal["foreground", "background"]
    seen: bool
    state: Literal["active", "archived"]
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None
    has_vector: bool
    attributes: dict[str, Any] | None = Field(None, description=(
        "what the host keeps with the memory besides its words (agent_id, app_id, run_id, metadata, categories, "
        "expiration_date, timestamp: mem0's fields), or null"))
    expires_at: datetime | None = Field(None, description="when it is forgotten (UTC), or null: kept until forgotten")
    use: bool = Field(True, description="false: the person said \"don't use this\" (no app receives it)")

    @classmethod
    def of(cls, memory: Memory) -> MemoryOut:
        return cls.model_validate(memory.to_json())


class RememberIn(Strict):
    text: Text
    kind: Kind | None = None
    importance: Importance | None = None
    role: Annotated[str, StringConstraints(max_length=64)] | None = None
    explicit: Flag = False
    on_duplicate: Literal["replace", "reinforce"] | None = None
    pinned: Flag = False
    person_name: Annotated[str, StringConstraints(max_length=200)] | None = None
    expires_at: Expiry | None = Field(None, description=(
        "when to forget it (RFC 3339 with its offset, kept in UTC); 422 invalid_expiry, expiry_in_past"))


class SavedOut(BaseModel):
    memory: MemoryOut
    replaced_id: str | None
    reinforced: bool


class UpdateIn(Strict):
    text: Text | None = None
    kind: Kind | None = None
    importance: Importance | None = None
    pinned: Flag | None = None
    in_place: Flag = False
    expires_at: Expiry | None = Field(None, description=(
        "when to forget it (RFC 3339); null: never; left out: as it was. Pinning drops it"))
    use: Flag | None = Field(None, description=(
        "false: \"don't use this\", withheld from every app (the person allows it again in the portal); true "
        "from an app changes nothing. No new revision"))


class ListQuery(Strict):
    kind: Kind | None = None
    state: Literal["active", "archived", "all"] = "active"
    channel: Literal["foreground", "background"] | None = None
    seen: bool | None = None
    limit: int = Field(50, ge=1, le=200)
    cursor: Annotated[str, StringConstraints(max_length=500)] | None = None


class PageOut(BaseModel):
    items: list[MemoryOut]
    next_cursor: str | None


class UndoOut(BaseModel):
    memory: MemoryOut | None


class RevisionOut(BaseModel):
    id: str
    revision: int
    text: str
    kind: str
    importance: int
    origin: str
    sources: list[SourceOut]
    written_at: datetime


class HistoryOut(BaseModel):
    items: list[RevisionOut]


class RecallIn(Strict):
    query: Annotated[str, StringConstraints(max_length=2000)]
    kinds: list[Kind] | None = Field(None, max_length=20)
    after: datetime | None = None
    before: datetime | None = None
    limit: int = Field(5, ge=1, le=100)
    min_similarity: float | None = Field(None, ge=-1.0, le=1.0)
    relevant_only: Flag = Field(False, description=(
        "Only memories sharing a word with the query or as close by meaning as the host's relevance "
        "floor (MEMORY_RELEVANCE_FLOOR, 0.2 by default): a query about nothing known finds nothing."))
    conversation_ref: ConversationRef


class HitOut(BaseModel):
    memory: MemoryOut
    score: float
    match: Literal["vector", "lexical", "hybrid"]


class RecallOut(BaseModel):
    items: list[HitOut]


class PortraitQuery(Strict):
    format: Literal["bullets", "dated", "json"] = "bullets"
    max_length: int = Field(1200, ge=0, le=100_000)
    min_importance: int = Field(4, ge=1, le=5)
    masked: bool = False
    fill: bool = False
    conversation_ref: ConversationRef


class PortraitOut(BaseModel):
    text: str
    ids: list[str]
    left_out: int = Field(..., description=(
        "how many of the person's memories are not in the portrait (neither pinned nor important enough, or no "
        "room left); recall finds them. An empty text with left_out above 0: nothing is pinned or important "
        "enough yet, not nothing kept"))


class IdsIn(Strict):
    ids: list[Id] = Field(..., max_length=1000)


class MarkedOut(BaseModel):
    marked: int


class UnseenOut(BaseModel):
    items: list[MemoryOut]


class SettingsIn(Strict):
    paused: Flag


class SettingsOut(BaseModel):
    paused: bool


class ExportOut(BaseModel):
    owner_id: str
    scope: str
    exported_at: datetime
    settings: SettingsOut
    memories: list[dict[str, Any]]
    app_controls: dict[str, str] = Field(default_factory=dict)  # what the person decided about each app
    app_uses: list[dict[str, Any]] = Field(default_factory=list)  # each app's uses, content-free
    jobs: list[dict[str, Any]] = Field(default_factory=list)  # this app's background consolidations, counts only


class PurgeOut(BaseModel):
    memories: int
    revisions: int
    settings: int
    refs: int
    receipts: int
    tombstones: int
    app_uses: int = 0
    app_controls: int = 0
    jobs: int = 0


class ToolCallIn(Strict):
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    role: Annotated[str, StringConstraints(max_length=64)] | None = None
    explicit: Flag = False
    language: Annotated[str, StringConstraints(max_length=16)] | None = None
    person_name: Annotated[str, StringConstraints(max_length=200)] | None = None
    conversation_ref: ConversationRef


class ToolResultOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    ok: bool
    code: str
    reason: str | None = None
    message: str | None = None
    undo: dict[str, str] | None = None


class ToolFunction(BaseModel):
    name: str
    description: str
    parameters: dict[str, Any]


class ToolOut(BaseModel):
    type: Literal["function"]
    function: ToolFunction


class Empty(BaseModel):
    """No content."""
