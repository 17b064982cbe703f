"""The model tools: remember, recall, update_memory and forget, for a chat model's function calls.

Framework-free. `run_tool()` runs one call against the MemoryService for a place the host took
from its authentication (never from the model); the OpenAI function-calling declarations are in
`portal.services.tool_schemas`. Whatever the model sends, `run_tool` answers a dict and never
raises on bad arguments:

    {"ok": True, "code": "memory_saved" | "memories_found" | "memory_corrected" | "memory_forgotten", ...}
    {"ok": False, "code": "refused", "reason": "<code>"}

Writes carry `undo: {"id": ...}` for `MemoryService.undo` (None when there is nothing to undo:
a reinforced duplicate, a correction that changed nothing, an erasure). With `language`, a
`message` from the catalog is added when it has one. With the AI off for the place every tool
answers `ai_disabled` (DESIGN §6). Every call is bound to the place: another owner's or scope's
memory is simply not found.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from portal.domain.catalog import message as catalog_message
from portal.domain.errors import Conflict, InvalidArgument, NotFound, Refused
from portal.domain.text import fold
from portal.domain.types import Memory, Place, Source, as_place
from portal.services.tool_schemas import RECALL_DEFAULT, RECALL_MAX, TOOL_NAMES

if TYPE_CHECKING:
    from portal.services.memory_service import MemoryService

log = logging.getLogger("portal.memory")

_DIGITS = re.compile(r"\s*[+-]?\d{1,9}\s*")


class _Invalid(Exception):
    """The model's arguments do not fit the tool's schema."""


# ---------------------------------------------------------------------------- running


def run_tool(
    service: MemoryService,
    place: Place | Any,
    name: Any,
    arguments: Any,
    role: str | None = None,
    explicit: bool = False,
    language: str | None = None,
    person_name: str | None = None,
) -> dict[str, Any]:
    """Run the tool `name` with the model's `arguments` for `place` and answer its result.

    `arguments` is the call's JSON object (a dict, or the JSON text the OpenAI format carries).
    `role`, `explicit` (the person asked for it to be kept) and `person_name` come from the host,
    never from the model. The place must be valid (InvalidWhere otherwise: it is the host's, not
    the model's, to get right); anything the model sends gets an answer, not an exception.
    """
    place = as_place(place)
    if not isinstance(name, str) or name not in TOOL_NAMES:
        return _refused("unknown_tool", language)
    if not service.ai_enabled(place):
        return _refused("ai_disabled", language)
    if (role is not None and not isinstance(role, str)) or (person_name is not None and not isinstance(person_name, str)):
        return _refused("invalid_arguments", language)
    try:
        args = _object(arguments)
        if name == "remember":
            result = _remember(service, place, args, role, explicit is True, person_name)
        elif name == "recall":
            result = _recall(service, place, args)
        elif name == "update_memory":
            result = _update(service, place, args, person_name)
        else:
            result = _forget(service, place, args)
    except _Invalid:
        result = {"ok": False, "code": "refused", "reason": "invalid_arguments"}
    except (NotFound, Refused, Conflict, InvalidArgument) as refused:  # the service's error family: a code
        result = _refusal(refused.code)
    log.info("memory.tool name=%s code=%s reason=%s", name, result["code"], result.get("reason"))
    return _with_message(result, language)


def _remember(
    service: MemoryService, place: Place, args: Mapping[str, Any], role: str | None, explicit: bool,
    person_name: str | None,
) -> dict[str, Any]:
    text = _string(args, "text", required=True)
    kind = _string(args, "kind")
    importance = _importance(args.get("importance"))
    outcome = service.remember(
        place, text, kind=kind, importance=importance, role=role, explicit=explicit, origin="inferred",
        sources=(Source("tool", "remember"),), person_name=person_name, expires_at=_string(args, "expires_at"),
    )
    memory = outcome.memory
    return {
        "ok": True,
        "code": "memory_saved",
        "memory": _shown(memory),
        "replaced_id": outcome.replaced_id,
        "reinforced": outcome.reinforced,
        # A reinforced duplicate changed nothing to take back: undo on its id would erase it.
        "undo": None if outcome.reinforced else {"id": memory.id},
    }


def _recall(service: MemoryService, place: Place, args: Mapping[str, Any]) -> dict[str, Any]:
    query = _string(args, "query", required=True)
    limit = _limit(args.get("limit"))
    kinds = _kinds(service, args.get("kinds"))
    hits = service.recall(place, query, kinds=kinds, limit=limit)
    memories = [
        {
            "id": hit.memory.id,
            # Text on its way to a model goes through the mask (DESIGN §9).
            "text": service.mask(hit.memory.text, place),
            "kind": hit.memory.kind,
            "importance": hit.memory.importance,
            "score": round(float(hit.score), 6),
            "match": hit.match,
        }
        for hit in hits
    ]
    return {"ok": True, "code": "memories_found", "memories": memories}


def _update(service: MemoryService, place: Place, args: Mapping[str, Any], person_name: str | None) -> dict[str, Any]:
    memory_id = _memory_id(args)
    text = _string(args, "text", required=True)
    kind = _string(args, "kind")
    importance = _importance(args.get("importance"))
    before = service.reading.get(place, memory_id, use=False)  # NotFound for anyone else's id
    outcome = service.update(
        place, memory_id, text=text, kind=kind, importance=importance, origin="inferred",
        sources=(Source("tool", "update_memory"),), person_name=person_name,
    )
    memory = outcome.memory
    # A correction that changed nothing wrote no revision: undo would take back an earlier write.
    changed = memory.revision != before.revision and memory.last_op == "update"
    return {"ok": True, "code": "memory_corrected", "memory": _shown(memory), "undo": {"id": memory.id} if changed else None}


def _forget(service: MemoryService, place: Place, args: Mapping[str, Any]) -> dict[str, Any]:
    memory_id = _memory_id(args)
    service.forget(place, memory_id, origin="inferred")  # NotFound for anyone else's id; Refused when paused
    return {"ok": True, "code": "memory_forgotten", "id": memory_id, "undo": None}


# ---------------------------------------------------------------------------- arguments


def _object(arguments: Any) -> Mapping[str, Any]:
    """The arguments object; the JSON text of one (as the OpenAI format carries it) is read too."""
    if isinstance(arguments, (str, bytes, bytearray)):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            raise _Invalid() from None
    if not isinstance(arguments, Mapping):
        raise _Invalid()
    return arguments


def _shown(memory: Memory) -> dict[str, Any]:
    """A memory as a tool answers it: without the apps the person withheld it from (what they
    decided about other apps is not this one's to read)."""
    data = memory.to_json()
    data.pop("withheld_from", None)
    return data


def _string(args: Mapping[str, Any], key: str, required: bool = False) -> Any:
    """A string argument; a missing or null optional one is None."""
    value = args.get(key)
    if value is None:
        if required:
            raise _Invalid()
        return None
    if not isinstance(value, str):
        raise _Invalid()
    return value


def _memory_id(args: Mapping[str, Any]) -> str:
    value: str = _string(args, "id", required=True).strip()
    if not value:
        raise _Invalid()
    return value


def _importance(value: Any) -> Any:
    """What the service's importance reading accepts ("4", 4.6, "high"), clamped there to 1-5.
    Ints are clamped here first: a huge one must not overflow a float."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _Invalid()
    if isinstance(value, int):
        return min(5, max(1, value))
    return value


def _limit(value: Any) -> int:
    """How many memories to recall: an integer (or integral number or digits), clamped to 1-20."""
    if value is None:
        return RECALL_DEFAULT
    if isinstance(value, bool):
        raise _Invalid()
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise _Invalid()
        value = int(value)
    elif isinstance(value, str):
        if not _DIGITS.fullmatch(value):
            raise _Invalid()
        value = int(value)
    if not isinstance(value, int):
        raise _Invalid()
    return min(RECALL_MAX, max(1, value))


def _kinds(service: MemoryService, value: Any) -> tuple[str, ...] | None:
    """The kinds to narrow recall to, each matched (case and accents folded, then aliases) to a
    configured kind. Unlike writing, an unknown kind does not fall back to the default kind: a
    filter that silently became another one would hide memories."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(k, str) for k in value):
        raise _Invalid()
    kinds = service.options.kinds
    by_fold = {fold(k): k for k in kinds.kinds}
    by_fold.update({fold(a): k for a, k in kinds.aliases.items() if k in kinds.kinds and fold(a) not in by_fold})
    resolved: list[str] = []
    for raw in value:
        kind = by_fold.get(fold(raw.strip()))
        if kind is None:
            raise Refused("invalid_kind")
        if kind not in resolved:
            resolved.append(kind)
    return tuple(resolved) or None


# ---------------------------------------------------------------------------- results


def _refusal(code: str) -> dict[str, Any]:
    return {"ok": False, "code": "refused", "reason": code}


def _refused(code: str, language: str | None) -> dict[str, Any]:
    return _with_message(_refusal(code), language)


def _with_message(result: dict[str, Any], language: str | None) -> dict[str, Any]:
    """Add the catalog's text in `language` when one was asked for and the catalog has it."""
    if not language or not isinstance(language, str):
        return result
    if result["ok"]:
        values = {"count": len(result["memories"])} if result["code"] == "memories_found" else {}
        text = catalog_message(result["code"], language, **values)
    else:
        text = catalog_message(f"refused.{result['reason']}", language)
    if text is not None:
        result["message"] = text
    return result


__all__ = ["run_tool"]
