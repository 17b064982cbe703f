"""`MemoryClient`: one method per endpoint of the JSON API (DESIGN §11), on httpx."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from portal.client.errors import ApiError, InvalidId, Redacted, error_of
from portal.client.models import (
    ConsolidationResult,
    Export,
    ForgetPreview,
    ForgotMatching,
    Hit,
    Memory,
    Page,
    Portrait,
    PurgeCounts,
    Revision,
    Saved,
    parse_time,
)
from portal.inputs import is_valid_id

API_PREFIX = "/api/v1"
KEEP: Any = object()  # `update` leaves the expiry as it is
Transcript = str | Sequence[Mapping[str, Any]]


class MemoryClient:
    """A client for one API key (hence one tenant). `base_url` is the server's root (or already ends
    in /api/v1); `transport` lets tests serve the app in process (`httpx.WSGITransport(app=app)`).

    Every write takes an optional `idempotency_key`: a retry with the same key and the same
    arguments is applied once and answers what the first call answered. Errors raise `ApiError`
    subclasses; `last_response` keeps the latest raw answer (not shared safely between threads)."""

    def __init__(self, base_url: str, api_key: str, timeout: float = 10.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        root = base_url.rstrip("/")
        if not root.endswith(API_PREFIX):
            root += API_PREFIX
        headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        self._http = httpx.Client(base_url=root, headers=headers, timeout=timeout, transport=transport)
        self.last_response: httpx.Response | None = None

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # ------------------------------------------------------------------ memories

    def remember(self, owner_id: str, text: str, kind: str | None = None, importance: int | float | str | None = None,
                 role: str | None = None, explicit: bool = False, on_duplicate: str | None = None,
                 pinned: bool = False, idempotency_key: str | None = None,
                 expires_at: datetime | str | None = None) -> Saved:
        """Keep a memory (or meet the duplicate it repeats); `Refused` with the code otherwise.
        `expires_at` (an aware datetime, or RFC 3339 text): when it is forgotten, by everything at
        once (`Refused` `invalid_expiry`, `expiry_in_past`); a duplicate met keeps its own."""
        body = _given(text=text, kind=kind, importance=importance, role=role, on_duplicate=on_duplicate,
                      expires_at=_time(expires_at))
        body.update(_flags(explicit=explicit, pinned=pinned))
        data, response = self._call("POST", _person(owner_id, "memories"), body, idempotency_key=idempotency_key)
        return Saved(Memory.of(data["memory"]), data.get("replaced_id"), bool(data.get("reinforced")),
                     response.headers.get("Idempotent-Replayed") == "true")

    def list(self, owner_id: str, kind: str | None = None, state: str | None = None, channel: str | None = None,
             seen: bool | None = None, limit: int | None = None, cursor: str | None = None) -> Page:
        """One page of the person's memories, newest first (state `active` unless asked)."""
        params = _given(kind=kind, state=state, channel=channel, seen=seen, limit=limit, cursor=cursor)
        data, _ = self._call("GET", _person(owner_id, "memories"), params=params)
        return Page([Memory.of(m) for m in data["items"]], data.get("next_cursor"))

    def iter_memories(self, owner_id: str, kind: str | None = None, state: str | None = None,
                      channel: str | None = None, seen: bool | None = None, page_size: int = 200) -> Iterator[Memory]:
        """Every memory that matches, page after page."""
        cursor: str | None = None
        while True:
            page = self.list(owner_id, kind=kind, state=state, channel=channel, seen=seen, limit=page_size, cursor=cursor)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def get(self, owner_id: str, memory_id: str) -> Memory:
        data, _ = self._call("GET", _memory(owner_id, memory_id))
        return Memory.of(data)

    def update(self, owner_id: str, memory_id: str, text: str | None = None, kind: str | None = None,
               importance: int | float | str | None = None, pinned: bool | None = None, in_place: bool = False,
               if_revision: int | None = None, idempotency_key: str | None = None, expires_at: Any = KEEP,
               use: bool | None = None) -> Memory:
        """Correct a memory (a new revision; with `in_place` no earlier text is kept). With
        `if_revision`, a memory changed since raises `Conflict` carrying `actual_revision`.
        `expires_at`: when it is forgotten (a datetime or RFC 3339 text), None for never, left out
        to keep it as it is. `use`: as `set_use`, after the correction."""
        body = _given(text=text, kind=kind, importance=importance, pinned=pinned, use=use)
        body.update(_flags(in_place=in_place))
        if expires_at is not KEEP:
            body["expires_at"] = _time(expires_at)
        headers = {"If-Match": f'"{if_revision}"'} if if_revision is not None else {}
        data, _ = self._call("PATCH", _memory(owner_id, memory_id), body, headers=headers,
                             idempotency_key=idempotency_key)
        return Memory.of(data)

    def set_use(self, owner_id: str, memory_id: str, use: bool, if_revision: int | None = None,
                idempotency_key: str | None = None) -> Memory:
        """"Don't use this" (`use=False`): no app receives the memory any more (recall, portrait,
        tools, MCP), the person still sees and downloads it; no new revision. `use=True` from an app
        changes nothing: only the person allows it again. Answers the memory with its `use`."""
        return self.update(owner_id, memory_id, if_revision=if_revision, idempotency_key=idempotency_key, use=use)

    def undo(self, owner_id: str, memory_id: str, idempotency_key: str | None = None) -> Memory | None:
        """Take back the last write: the restored memory, or None when the undo removed it."""
        data, _ = self._call("POST", _memory(owner_id, memory_id, "undo"), idempotency_key=idempotency_key)
        return Memory.of(data["memory"]) if data.get("memory") else None

    def forget(self, owner_id: str, memory_id: str, idempotency_key: str | None = None) -> None:
        """Erase a memory, every revision and vector, for good."""
        self._call("DELETE", _memory(owner_id, memory_id), idempotency_key=idempotency_key)

    def preview_forget_matching(self, owner_id: str, query: str) -> ForgetPreview:
        """Everything about a subject (words, meaning, the people it names), active and archived:
        nothing changes yet. Hand `preview` and the ids to keep forgetting to `forget_matching`."""
        data, _ = self._call("POST", _person(owner_id, "forget-matching"), {"query": query, "dry_run": True})
        return ForgetPreview([Memory.of(m) for m in data["items"]], data["preview"], bool(data["more"]))

    def forget_matching(self, owner_id: str, preview: str, ids: Sequence[str],
                        idempotency_key: str | None = None) -> ForgotMatching:
        """Forget exactly these of a preview's memories (`Refused` `not_previewed` for any other id,
        `invalid_preview` once the preview is 30 minutes old); one changed since is kept, in `changed`."""
        data, _ = self._call("POST", _person(owner_id, "forget-matching"), {"preview": preview, "ids": builtins.list(ids)},
                             idempotency_key=idempotency_key)
        return ForgotMatching(int(data["memories"]), int(data["revisions"]), builtins.list(data["forgotten"]),
                              builtins.list(data["changed"]), builtins.list(data["gone"]))

    def history(self, owner_id: str, memory_id: str) -> builtins.list[Revision]:
        data, _ = self._call("GET", _memory(owner_id, memory_id, "history"))
        return [Revision.of(r) for r in data["items"]]

    # ------------------------------------------------------------------ reading

    def recall(self, owner_id: str, query: str, kinds: Sequence[str] | None = None, after: datetime | None = None,
               before: datetime | None = None, limit: int | None = None,
               min_similarity: float | None = None, relevant_only: bool = False,
               conversation_ref: str | None = None) -> builtins.list[Hit]:
        """The person's memories that best answer `query`, best first (at most `limit`, 5 by default).

        Recall answers the closest memories however far they are: a query about nothing the person
        said still gets hits (their score ranks them, as low as 0.0; it is no verdict of relevance).
        Pass `relevant_only=True` to get only memories that share a word with the query or are close
        enough in meaning (the host's MEMORY_RELEVANCE_FLOOR, or `min_similarity` if higher): then
        such a query finds nothing. With the AI off for the tenant, memories are found by their
        words only. `conversation_ref` (1 to 200 printable characters): the assistant's conversation
        these hits are for, so the person sees what each conversation was given (`Refused`
        `invalid_conversation_ref` otherwise); the same on `portrait` and `call_tool`."""
        body = _given(query=query, kinds=builtins.list(kinds) if kinds is not None else None,
                      after=after.isoformat() if after else None, before=before.isoformat() if before else None,
                      limit=limit, min_similarity=min_similarity, relevant_only=relevant_only or None,
                      conversation_ref=conversation_ref)
        data, _ = self._call("POST", _person(owner_id, "recall"), body)
        return [Hit(Memory.of(h["memory"]), float(h["score"]), h["match"]) for h in data["items"]]

    def portrait(self, owner_id: str, format: str | None = None, max_length: int | None = None,
                 min_importance: int | None = None, masked: bool | None = None, fill: bool | None = None,
                 conversation_ref: str | None = None) -> Portrait:
        """What to put in the system prompt: the pinned memories, then those of importance 4 or more
        (`min_importance`), cut at `max_length` characters; `Portrait.left_out` counts the others."""
        params = _given(format=format, max_length=max_length, min_importance=min_importance, masked=masked, fill=fill,
                        conversation_ref=conversation_ref)
        data, _ = self._call("GET", _person(owner_id, "portrait"), params=params)
        return Portrait(data["text"], builtins.list(data["ids"]), int(data.get("left_out", 0)))

    def unseen(self, owner_id: str) -> builtins.list[Memory]:
        """What was learnt in the background and the person has not seen yet."""
        data, _ = self._call("GET", _person(owner_id, "unseen"))
        return [Memory.of(m) for m in data["items"]]

    def export(self, owner_id: str) -> Export:
        data, _ = self._call("GET", _person(owner_id, "export"))
        return Export(data["owner_id"], data["scope"], parse_time(data["exported_at"]), data["settings"]["paused"],
                      data["memories"])

    # ------------------------------------------------------------------ other writes

    def consolidate(self, owner_id: str, transcript: Transcript, ref: str, role: str | None = None,
                    person_name: str | None = None, language: str | None = None,
                    idempotency_key: str | None = None, temporary: bool = False) -> ConsolidationResult:
        """Learn from a finished conversation, once per `ref`; `Refused("ai_disabled")` with the AI off.
        `temporary`: a conversation that teaches nothing (status `temporary`: nothing learnt, nothing
        of it kept, the ref left free for a later consolidation)."""
        turns = transcript if isinstance(transcript, str) else [dict(t) for t in transcript]
        body = _given(transcript=turns, ref=ref, role=role, person_name=person_name, language=language)
        body.update(_flags(temporary=temporary))
        data, _ = self._call("POST", _person(owner_id, "consolidate"), body, idempotency_key=idempotency_key)
        return ConsolidationResult.of(data)

    def mark_used(self, owner_id: str, ids: Sequence[str], idempotency_key: str | None = None) -> int:
        data, _ = self._call("POST", _person(owner_id, "used"), {"ids": builtins.list(ids)},
                             idempotency_key=idempotency_key)
        return int(data["marked"])

    def mark_seen(self, owner_id: str, ids: Sequence[str], idempotency_key: str | None = None) -> int:
        data, _ = self._call("POST", _person(owner_id, "seen"), {"ids": builtins.list(ids)},
                             idempotency_key=idempotency_key)
        return int(data["marked"])

    def get_settings(self, owner_id: str) -> bool:
        """Whether the person's learning is paused."""
        data, _ = self._call("GET", _person(owner_id, "settings"))
        return bool(data["paused"])

    def set_paused(self, owner_id: str, paused: bool, idempotency_key: str | None = None) -> bool:
        data, _ = self._call("PUT", _person(owner_id, "settings"), {"paused": paused}, idempotency_key=idempotency_key)
        return bool(data["paused"])

    def erase_person(self, owner_id: str, idempotency_key: str | None = None) -> PurgeCounts:
        """Erase everything kept about the person (needs the `erasure` permission)."""
        data, _ = self._call("DELETE", _person(owner_id), idempotency_key=idempotency_key)
        return PurgeCounts(**{k: int(v) for k, v in data.items() if k in PurgeCounts.__dataclass_fields__})

    # ------------------------------------------------------------------ model tools

    def tools(self) -> builtins.list[dict[str, Any]]:
        """The model tools in the OpenAI function-calling format, ready to hand to a chat model."""
        data, _ = self._call("GET", "/tools")
        return builtins.list(data)

    def call_tool(self, owner_id: str, name: str, arguments: Mapping[str, Any] | str, role: str | None = None,
                  explicit: bool = False, language: str | None = None,
                  idempotency_key: str | None = None, conversation_ref: str | None = None) -> dict[str, Any]:
        """Run a tool call the model made; the answer (`ok`, `code`, ...) goes back to the model.
        `conversation_ref`: the assistant's conversation it is for (as `recall`'s), from the host."""
        body = _given(arguments=arguments if isinstance(arguments, str) else dict(arguments), role=role,
                      language=language, conversation_ref=conversation_ref)
        body.update(_flags(explicit=explicit))
        data, _ = self._call("POST", _person(owner_id, "tools", name), body, idempotency_key=idempotency_key)
        return dict(data)

    # ------------------------------------------------------------------ transport

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None, params: dict[str, Any] | None = None,
              headers: dict[str, str] | None = None, idempotency_key: str | None = None) -> tuple[Any, httpx.Response]:
        sent = dict(headers or {})
        if idempotency_key is not None:
            sent["Idempotency-Key"] = idempotency_key
        content = None
        if body is not None:
            content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            sent["Content-Type"] = "application/json"
        query = {k: ("true" if v is True else "false" if v is False else v) for k, v in (params or {}).items()}
        response = self._http.request(method, path, content=content, params=query or None, headers=sent)
        self.last_response = response
        if response.status_code >= 300:  # a redirect is never followed: it could lead to another person
            raise error_of(response)
        try:
            data: Any = response.json() if response.content else None
        except ValueError:
            raise ApiError(response.status_code, "invalid_response", "the answer is not JSON") from None
        if data == {"redacted": True} and response.headers.get("Idempotent-Replayed") == "true":
            raise Redacted(response.status_code, "redacted", "applied once; its memory changed or was forgotten since")
        return data, response


def _given(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _time(value: datetime | str | None) -> str | None:
    """A time as RFC 3339 text (a datetime without a time zone is sent as it is, and refused)."""
    return value.isoformat() if isinstance(value, datetime) else value


def _flags(**flags: bool) -> dict[str, bool]:
    # Defaults stay out of the body, so that retries built with or without them hash alike.
    return {k: True for k, v in flags.items() if v}


def _person(owner_id: str, *rest: str) -> str:
    """The path of a person's resource, each segment percent-encoded whole. An id that could change
    the route (".", "..", one holding "/", "?", "#", a control character: portal.inputs) is refused
    before anything is sent: httpx would resolve ".." and DELETE /people/ada/memories/.. would
    erase ada altogether."""
    _check_id(owner_id)
    return "/".join(["/people", *(quote(part, safe="") for part in (owner_id, *rest))])


def _memory(owner_id: str, memory_id: str, *rest: str) -> str:
    _check_id(memory_id)
    return _person(owner_id, "memories", memory_id, *rest)


def _check_id(value: object) -> None:
    if not is_valid_id(value):
        raise InvalidId()
