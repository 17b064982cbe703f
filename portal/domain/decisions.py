"""What a person decides about each memory besides its words (issue 29): which apps may use it
("don't use this"), when it is forgotten ("forget after"), and the conversations of the
assistant that it served, named by a digest of their reference only.

Plain values and rules, no storage: the stores keep `withheld` as `withheld_json` and filter on
`Memory.usable_by` and `Memory.alive_at`; the services check what callers send with `expiry_of`,
`conversation_of` and `learnt_expiry`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime, timedelta
from typing import Any

from portal.domain.errors import InvalidArgument
from portal.inputs import is_valid_text, moment_in_utc

EVERY_APP = "*"
MAX_REF = 200  # a conversation reference: at most this many characters
MAX_LEARNT_DAYS = 36500  # "forget learnt memories after N days": at most a hundred years
# The person's choices in the portal: a day, a week, a month, a year (and a date, or never).
AFTER = {"day": timedelta(days=1), "week": timedelta(weeks=1), "month": timedelta(days=30), "year": timedelta(days=365)}
LEARNT_CHOICES = (0, 30, 90, 180, 365)  # never, about 1, 3, 6 and 12 months


def withheld_json(withheld: tuple[str, ...]) -> str | None:
    """How a store keeps it: None for every app may, else a JSON list (["*"]: no app)."""
    return json.dumps(list(withheld)) if withheld else None


def withheld_of(raw: str | None) -> tuple[str, ...]:
    if not raw:
        return ()
    found = json.loads(raw)
    return tuple(str(a) for a in found) if isinstance(found, list) else ()


def withheld_after(current: tuple[str, ...], use: bool, app_id: str | None) -> tuple[str, ...]:
    """The apps it is withheld from once the person said `use` (True: may use) for one app
    (`app_id`) or for every app (None)."""
    if app_id is None:
        return () if use else (EVERY_APP,)
    if EVERY_APP in current:
        if use:
            raise InvalidArgument("withheld_from_every_app")  # allow every app first: one answer, not a list
        return current
    apps = set(current)
    if use:
        apps.discard(app_id)
    else:
        apps.add(app_id)
    return tuple(sorted(apps))


def expiry_of(value: Any, now: datetime) -> datetime | None:
    """A memory's expiry from what a caller sent (a moment by `portal.inputs.moment_in_utc`: an
    aware datetime or RFC 3339 text that exists in UTC, kept in UTC), None for none;
    InvalidArgument `invalid_expiry` for anything else, `expiry_in_past` for a time already past."""
    if value is None:
        return None
    try:
        moment = moment_in_utc(value)
    except ValueError:
        raise InvalidArgument("invalid_expiry") from None
    if moment <= now:
        raise InvalidArgument("expiry_in_past")
    return moment


def after(choice: str, now: datetime) -> datetime:
    """The expiry of a portal choice ("day", "week", "month", "year") from now."""
    if choice not in AFTER:
        raise InvalidArgument("invalid_expiry")
    return now + AFTER[choice]


def learnt_days_of(value: Any) -> int | None:
    """A "forget learnt memories after N days" setting: None (follow the default), 0 (never) or
    1..MAX_LEARNT_DAYS; InvalidArgument `invalid_learnt_days` otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LEARNT_DAYS:
        raise InvalidArgument("invalid_learnt_days")
    return value


def learnt_expiry(days: int | None, created_at: datetime) -> datetime | None:
    """When a memory the assistant learnt at `created_at` is forgotten under this setting."""
    return created_at + timedelta(days=days) if days else None


def conversation_of(ref: Any) -> str | None:
    """The assistant's conversation reference, checked: None, or 1..200 printable characters;
    InvalidArgument `invalid_conversation_ref` otherwise."""
    if ref is None:
        return None
    if (not isinstance(ref, str) or not 1 <= len(ref) <= MAX_REF or not is_valid_text(ref) or not ref.isprintable()
            or not ref.strip()):
        raise InvalidArgument("invalid_conversation_ref")
    return ref


def conversation_key(ref: str, secret: bytes | None) -> str:
    """What is kept of a conversation reference: a digest (keyed by the store's words secret when
    it has one), so a reference that held words leaves none behind."""
    data = ref.encode("utf-8", "surrogatepass")
    if secret:
        return hmac.new(secret, b"conversation\0" + data, hashlib.sha256).hexdigest()[:40]
    return hashlib.sha256(b"conversation\0" + data).hexdigest()[:40]


__all__ = ["AFTER", "EVERY_APP", "LEARNT_CHOICES", "MAX_LEARNT_DAYS", "MAX_REF", "after", "conversation_key",
           "conversation_of", "expiry_of", "learnt_days_of", "learnt_expiry", "withheld_after", "withheld_json",
           "withheld_of"]
