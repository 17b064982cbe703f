"""Reading what a person brings from elsewhere into memories to keep (DESIGN §13, "import"):

- our own export (`portal.domain.export`, format `memory-portal/export` version 1): every memory
  with its kind, importance, pin, origin, channel, state, times and earlier revisions;
- mem0's `get_all` / export JSON: `{"results": [{"memory": ..., "created_at": ...}, ...]}` or a
  plain list of such records;
- a plain list of lines (what a person copies out of another assistant's memory screen): one
  memory per line, list bullets and numbers taken off.

Pure: no store, no clock. What is wrong with the file as a whole is a `Refused` with a stable
code (`import_too_large`, `import_unreadable`, `import_unknown_version`, `import_empty`); what is
wrong with one memory or one earlier wording is left to the checks every write runs
(`portal.services.portability`): this module only reads each field's shape, never trusts its value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from portal.domain.errors import Refused
from portal.domain.export import FORMAT, VERSION
from portal.domain.types import Source
from portal.inputs import moment_in_utc

MAX_BYTES = 5 * 1024 * 1024
MAX_ITEMS = 5000
BULLET = re.compile(r"^\s*(?:[-*•·–]|\d{1,3}[.)])\s+")


@dataclass(frozen=True, slots=True)
class EarlierWording:
    revision: int  # 0 when the file gives no whole number
    text: Any  # text, kind and importance as the file gives them: checked when it is kept
    kind: Any
    importance: Any
    origin: str
    sources: tuple[Source, ...]
    written_at: datetime | None


@dataclass(frozen=True, slots=True)
class Item:
    """One memory to import, as the file gives it; None where the file says nothing."""

    text: Any
    kind: Any = None
    importance: Any = None
    pinned: bool = False
    origin: str = "asserted"
    channel: str = "foreground"
    seen: bool = True
    state: str = "active"
    revision: int = 1
    sources: tuple[Source, ...] = ()
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_used_at: datetime | None = None
    earlier: tuple[EarlierWording, ...] = field(default_factory=tuple)  # as the file lists them, newest first
    expires_at: datetime | None = None  # when it is forgotten (the person's decision, kept)
    withheld: tuple[str, ...] = ()  # the apps that may not use it ("don't use this", kept)


@dataclass(frozen=True, slots=True)
class Parsed:
    format: str  # "memory-portal/export", "mem0" or "lines"
    items: list[Item]


@dataclass(frozen=True, slots=True)
class Choices:
    """What the person chose in the import's preview, by each memory's place in the file (0 for
    the first): the kind they gave a memory, and the memories they left out. A place the file does
    not have is ignored."""

    kinds: Mapping[int, str] = field(default_factory=dict)
    left_out: frozenset[int] = frozenset()


def parse(raw: bytes) -> Parsed:
    if len(raw) > MAX_BYTES:
        raise Refused("import_too_large")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Refused("import_unreadable") from None
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            raise Refused("import_unreadable") from None
        parsed = _json(data)
    else:
        parsed = Parsed("lines", [Item(line) for line in _lines(text)])
    if not parsed.items:
        raise Refused("import_empty")
    if len(parsed.items) > MAX_ITEMS:
        raise Refused("import_too_large")
    return parsed


def _lines(text: str) -> list[str]:
    return [kept for line in text.splitlines() if (kept := BULLET.sub("", line).strip())]


def _json(data: Any) -> Parsed:
    if isinstance(data, dict) and data.get("format") == FORMAT:
        if data.get("version") != VERSION:
            raise Refused("import_unknown_version")
        memories = data.get("memories")
        if not isinstance(memories, list) or not all(isinstance(m, dict) for m in memories):
            raise Refused("import_unreadable")
        return Parsed(FORMAT, [_ours(m) for m in memories])
    records = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if isinstance(records, list) and all(isinstance(r, dict) and "memory" in r for r in records):
        return Parsed("mem0", [Item(r["memory"], created_at=_time(r.get("created_at")),
                                    updated_at=_time(r.get("updated_at"))) for r in records])
    raise Refused("import_unreadable")


def _ours(m: dict[str, Any]) -> Item:
    revisions = m.get("revisions")
    earlier = tuple(
        EarlierWording(_int(r.get("revision"), 0), r.get("text"), r.get("kind") or m.get("kind"), r.get("importance"),
                       _origin(r.get("origin")), _sources(r.get("sources")), _time(r.get("written_at")))
        for r in (revisions if isinstance(revisions, list) else ()) if isinstance(r, dict)
    )
    return Item(
        m.get("text"), m.get("kind"), m.get("importance"), pinned=m.get("pinned") is True, origin=_origin(m.get("origin")),
        channel="background" if m.get("channel") == "background" else "foreground", seen=m.get("seen") is not False,
        state="archived" if m.get("state") == "archived" else "active", revision=_int(m.get("revision"), 1),
        sources=_sources(m.get("sources")), created_at=_time(m.get("created_at")), updated_at=_time(m.get("updated_at")),
        last_used_at=_time(m.get("last_used_at")), earlier=earlier, expires_at=_time(m.get("expires_at")),
        withheld=_withheld(m),
    )


def _withheld(m: dict[str, Any]) -> tuple[str, ...]:
    """"Don't use this" as our export writes it: `use` false (no app), else `withheld_from`."""
    if m.get("use") is False:
        return ("*",)
    apps = m.get("withheld_from")
    if not isinstance(apps, list):
        return ()
    return tuple(sorted({a for a in apps if isinstance(a, str) and 1 <= len(a) <= 64 and a.isprintable() and a != "*"}))


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1_000_000 else default


def _origin(value: Any) -> str:
    return "inferred" if value == "inferred" else "asserted"


def _sources(value: Any) -> tuple[Source, ...]:
    if not isinstance(value, list):
        return ()
    kept = []
    for s in value[:20]:
        if isinstance(s, dict) and isinstance(s.get("kind"), str) and len(s["kind"]) <= 40:
            ref = s.get("ref") if isinstance(s.get("ref"), str) and len(s["ref"]) <= 200 else None
            kept.append(Source(s["kind"], ref))
    return tuple(kept)


def _time(value: Any) -> datetime | None:
    """An ISO 8601 time with its zone (one without is read as UTC), or None."""
    if not isinstance(value, str):
        return None
    try:
        moment = moment_in_utc(value, naive_is_utc=True)
    except ValueError:
        return None
    return moment if 1970 <= moment.year <= 9998 else None


