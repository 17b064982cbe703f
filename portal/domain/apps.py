"""Connected apps: who uses what is known about a person.

An API key belongs to an app of its tenant, named by the key's name ("Support bot", "Claude
Desktop"): keys of one tenant with the same name (compared case- and accent-folded) are one app, so
a key rotated keeps its app and what the person decided about it. A key without a name is an app of
its own.

Every read and write an app makes for a person is kept as a use, content-free: which app, which
memory, how (`ACTIONS`), on which day, how many times and when last. A conversation the app marked
temporary (`TEMPORARY`: nothing learnt, nothing of it kept) is a use of no memory (`NO_MEMORY`):
only its count and time. An app that never wrote is one that only reads
(`AppSummary.only_reads`). A person may pause an app
(it may still read, it may not write: `paused`) or block it (it can neither read nor write:
`app_blocked`), and resume it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime

from portal.domain.people import ApiKey
from portal.domain.text import fold

REMEMBERED = "remembered"
RECALLED = "recalled"
CORRECTED = "corrected"
FORGOT = "forgot"
READ = "read"
TEMPORARY = "temporary"  # a conversation the app marked temporary: nothing learnt, nothing of it kept
MEMORY_ACTIONS = (REMEMBERED, RECALLED, CORRECTED, FORGOT, READ)  # what an app did with a memory
ACTIONS = (*MEMORY_ACTIONS, TEMPORARY)
WRITES = (REMEMBERED, CORRECTED, FORGOT)  # what an app that only reads never did
NO_MEMORY = ""  # the memory id of a use that touched none (a temporary conversation)

PAUSED = "paused"
BLOCKED = "blocked"
CONTROLS = (PAUSED, BLOCKED)


@dataclass(frozen=True, slots=True)
class App:
    id: str
    name: str


def app_of(key: ApiKey) -> App:
    """The app a key belongs to: its tenant and folded name; a key without a name is its own app."""
    name = " ".join((key.name or "").split())
    if not name:
        return App(f"key-{key.id}", f"Key {key.prefix}")
    digest = hashlib.sha256(f"{key.tenant_id}\0{fold(name)}".encode()).hexdigest()[:32]
    return App(digest, name)


def apps_of(keys: Iterable[ApiKey]) -> dict[str, App]:
    """The apps of these keys by id (revoked keys too: their uses still name them)."""
    found: dict[str, App] = {}
    for key in sorted(keys, key=lambda k: k.created_at):
        app = app_of(key)
        found[app.id] = app  # the newest key's spelling of the name
    return found


def app_named(name: str, keys: Iterable[ApiKey]) -> App | None:
    """The app of these keys (one tenant's keys in use) called `name`, compared as keys' names make
    one app (case, accents and runs of spaces folded); None when no key of theirs makes it. An app
    is only ever made by a key: naming one finds it, never creates it."""
    wanted = fold(" ".join(name.split())) if isinstance(name, str) else ""
    if not wanted:
        return None
    return next((app for app in apps_of(keys).values() if fold(app.name) == wanted), None)


@dataclass(frozen=True, slots=True)
class AppUse:
    """How often one app touched one memory one way on one day (UTC), and when last."""

    app_id: str
    memory_id: str  # NO_MEMORY for a use that touched none (a temporary conversation)
    action: str
    day: date
    count: int
    last_at: datetime


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation of one app, as the person sees it: which memories the assistant was given
    in it (recall, portrait, tools), first and last. `key` is a digest of the assistant's
    reference (`portal.domain.decisions.conversation_key`), never its words."""

    app_id: str
    key: str
    first_at: datetime
    last_at: datetime
    memory_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConversationCount:
    """How many conversations of one app used one memory, and when last."""

    app_id: str
    conversations: int
    last_at: datetime


@dataclass
class AppSummary:
    """What one app did with one person's memory, for the person's "Connected apps" page and staff."""

    app: App
    control: str | None = None
    last_at: datetime | None = None
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTIONS, 0))
    memories: int = 0

    @property
    def temporary(self) -> int:
        """How many conversations the app marked temporary (nothing learnt from them)."""
        return self.counts.get(TEMPORARY, 0)

    @property
    def only_reads(self) -> bool:
        """Whether the app used the person's memory and never changed it: it never remembered,
        corrected or forgot anything (it recalled, read or held temporary conversations only)."""
        return self.last_at is not None and not any(self.counts.get(action, 0) for action in WRITES)

    def to_json(self) -> dict[str, object]:
        return {"app_id": self.app.id, "name": self.app.name, "control": self.control,
                "last_at": self.last_at.isoformat() if self.last_at else None, "counts": dict(self.counts),
                "memories": self.memories}


def use_json(use: AppUse) -> dict[str, object]:
    """A use as the export and the API show it; a use of no memory (a temporary conversation) names none."""
    return {"app_id": use.app_id, "memory_id": use.memory_id or None, "action": use.action, "day": use.day.isoformat(),
            "count": use.count, "last_at": use.last_at.isoformat()}


def conversation_json(c: Conversation) -> dict[str, object]:
    return {"app_id": c.app_id, "conversation": c.key, "first_at": c.first_at.isoformat(),
            "last_at": c.last_at.isoformat(), "memory_ids": list(c.memory_ids)}


def unknown_app(app_id: str) -> App:
    """An app whose keys are all gone (its tenant removed them): its uses stay, under no name."""
    return App(app_id, "")


def summaries(uses: Iterable[AppUse], controls: dict[str, str], apps: dict[str, App]) -> list[AppSummary]:
    """One summary per app that used the place or that the person paused or blocked, most recent first."""
    by_app: dict[str, AppSummary] = {}
    touched: dict[str, set[str]] = {}
    for use in uses:
        summary = by_app.get(use.app_id)
        if summary is None:
            summary = by_app[use.app_id] = AppSummary(apps.get(use.app_id) or unknown_app(use.app_id))
        summary.counts[use.action] = summary.counts.get(use.action, 0) + use.count
        if summary.last_at is None or use.last_at > summary.last_at:
            summary.last_at = use.last_at
        if use.memory_id:
            touched.setdefault(use.app_id, set()).add(use.memory_id)
    for app_id, state in controls.items():
        summary = by_app.get(app_id)
        if summary is None:
            summary = by_app[app_id] = AppSummary(apps.get(app_id) or unknown_app(app_id))
        summary.control = state
    for app_id, summary in by_app.items():
        summary.memories = len(touched.get(app_id, ()))
    return sorted(by_app.values(), key=lambda s: (s.last_at is None, -(s.last_at.timestamp() if s.last_at else 0),
                                                   s.app.name, s.app.id))


__all__ = ["ACTIONS", "BLOCKED", "CONTROLS", "CORRECTED", "FORGOT", "MEMORY_ACTIONS", "NO_MEMORY", "PAUSED", "READ",
           "RECALLED", "REMEMBERED", "TEMPORARY", "WRITES", "App", "AppSummary", "AppUse", "Conversation",
           "ConversationCount", "app_named", "conversation_json", "app_of", "apps_of",
           "summaries", "unknown_app", "use_json"]
