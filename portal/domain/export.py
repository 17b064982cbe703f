"""The one export format: what a person downloads and what staff hand over for an access request
(GDPR art. 15 and 20), versioned so that an import can read it (docs/operations.md, "Export
format").

    {"format": "memory-portal/export", "version": 1, "exported_at": "...",
     "account": {"email", "name", "language", "created_at"} or null,
     "owner_id", "scope", "settings": {"paused"},
     "memories": [memory JSON with "revisions": [the earlier wordings, newest first]],
     "apps": [{"app_id", "name", "control", "uses": [{"memory_id", "action", "day", "count", "last_at"}]}],
     "jobs": [{"id", "state", "ref", "attempts", "created_at", "updated_at", "result", "reason", "transcript"}]}

`apps` are the recipients (art. 15(1)(c)): each connected app that used the memory, what the person
decided about it, and its uses, content-free. `jobs` are the conversations sent to be learnt in the
background, with the words each still holds: the transcript of one not over yet, the model's summary
(in `result`) until the app that sent it has read it. An import ignores both.

The CSV is a view of the same document: one row per wording (the current one, then each earlier
revision), booleans as `true`/`false`, sources as `kind:ref` joined by `; `.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from portal.domain.apps import App
from portal.domain.people import User

FORMAT = "memory-portal/export"
VERSION = 1

CSV_HEADER = (
    "memory_id", "revision", "current", "text", "kind", "importance", "pinned", "origin", "sources", "channel",
    "state", "created_at", "written_at", "last_used_at",
)


def document(data: Mapping[str, Any], person: User | None, apps: Mapping[str, App] | None = None) -> dict[str, Any]:
    """The export document around what the service read (`MemoryService.export`); `apps` names
    the tenant's apps by id."""
    account = None if person is None else {
        "email": person.email, "name": person.name, "language": person.language,
        "created_at": person.created_at.isoformat(),
    }
    return {"format": FORMAT, "version": VERSION, "exported_at": data["exported_at"], "account": account,
            "owner_id": data["owner_id"], "scope": data["scope"], "settings": dict(data["settings"]),
            "memories": list(data["memories"]), "apps": _apps(data, apps or {}), "jobs": list(data.get("jobs", ())),
            "conversations": list(data.get("conversations", ()))}


def _apps(data: Mapping[str, Any], names: Mapping[str, App]) -> list[dict[str, Any]]:
    controls: Mapping[str, str] = data.get("app_controls", {})
    uses: list[Mapping[str, Any]] = list(data.get("app_uses", ()))
    ids = sorted({u["app_id"] for u in uses} | set(controls))
    return [{"app_id": app_id, "name": names[app_id].name if app_id in names else None,
             "control": controls.get(app_id),
             "uses": [{k: v for k, v in u.items() if k != "app_id"} for u in uses if u["app_id"] == app_id]}
            for app_id in ids]


def csv_rows(doc: Mapping[str, Any]) -> Iterator[list[str]]:
    """The document's rows under `CSV_HEADER`."""
    for memory in doc["memories"]:
        wordings: Sequence[Mapping[str, Any]] = [memory, *memory.get("revisions", ())]
        for n, wording in enumerate(wordings):
            yield [
                memory["id"], str(wording["revision"]), _flag(n == 0), wording["text"], wording["kind"],
                str(wording["importance"]), _flag(bool(memory["pinned"])), wording["origin"],
                "; ".join(_source(s) for s in wording.get("sources", ())), memory["channel"], memory["state"],
                memory["created_at"], wording.get("written_at") or memory["updated_at"], memory.get("last_used_at") or "",
            ]


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _source(source: Mapping[str, Any]) -> str:
    return f"{source['kind']}:{source['ref']}" if source.get("ref") else str(source["kind"])
