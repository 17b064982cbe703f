"""What a host may keep with a memory besides its words (issue 28): the fields mem0's clients send
— the agent, app and run that made it, free `metadata`, `categories`, an `expiration_date` and the
`timestamp` it was said at — kept with the memory, given back, exported and erased with it.

They are the person's data like the text: stored encrypted as the text is, never logged, and
bounded here, at the edge of the service, so a host cannot hide a document in them. Pure.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from portal.inputs import is_valid_id, is_valid_text

from .errors import InvalidArgument, Refused

NAMES = ("agent_id", "app_id", "run_id", "metadata", "categories", "expiration_date", "timestamp", "immutable")
ENTITY_NAMES = ("agent_id", "app_id", "run_id")
MAX_METADATA = 2048  # characters of its JSON
MAX_DEPTH = 4
MAX_CATEGORIES, MAX_CATEGORY = 20, 64


def checked_attributes(given: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The attributes as kept (None values dropped), or Refused `invalid_attributes`. A memory with
    none keeps None, so nothing changes for memories that never had any."""
    if given is None:
        return None
    if not isinstance(given, Mapping):
        raise Refused("invalid_attributes")
    kept: dict[str, Any] = {}
    for name, value in given.items():
        if name not in NAMES:
            raise Refused("invalid_attributes")
        if value is None or (name == "immutable" and value is False):  # false: as every memory is
            continue
        kept[name] = _checked(name, value)
    return kept or None


def _checked(name: str, value: Any) -> Any:
    if name in ENTITY_NAMES:
        if not isinstance(value, str) or not is_valid_id(value):
            raise Refused("invalid_attributes")
        return value
    if name == "metadata":
        if not isinstance(value, dict) or not _plain(value, 0):
            raise Refused("invalid_attributes")
        if len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) > MAX_METADATA:
            raise Refused("invalid_attributes")
        return value
    if name == "categories":
        if (not isinstance(value, list) or len(value) > MAX_CATEGORIES
                or not all(isinstance(c, str) and 0 < len(c) <= MAX_CATEGORY and is_valid_text(c) for c in value)):
            raise Refused("invalid_attributes")
        return list(dict.fromkeys(value))
    if name == "expiration_date":
        return _day(value)
    if name == "immutable":
        if not isinstance(value, bool):
            raise Refused("invalid_attributes")
        return value
    # timestamp: when it was said, in seconds since 1970 (as mem0's clients send it), or an ISO 8601
    # day or moment (mem0ai 1.x's own example, "2025-01-15T12:00:00Z"), kept as its seconds too
    if isinstance(value, str):
        value = _seconds(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Refused("invalid_attributes")
    if not 0 <= value <= 253402300799:  # up to year 9999
        raise Refused("invalid_attributes")
    return int(value)


def _plain(value: Any, depth: int) -> bool:
    """JSON of bounded depth: objects with text keys, lists, text, numbers, booleans, null."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_valid_text(k) and _plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, str):
        return is_valid_text(value)
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, bool | int)


def _day(value: Any) -> str:
    if not isinstance(value, str):
        raise Refused("invalid_attributes")
    return _moment(value).date().isoformat()


def _seconds(value: str) -> float:
    """An ISO 8601 day (its midnight, UTC) or moment (UTC when it names no offset) in seconds since 1970."""
    try:
        return _moment(value).timestamp()
    except OverflowError:
        raise Refused("invalid_attributes") from None


def _moment(value: str) -> datetime:
    """An ISO 8601 day (its midnight) or moment, in its own offset (UTC when it names none)."""
    if len(value) > 40:
        raise Refused("invalid_attributes")
    try:
        at = (datetime.combine(date.fromisoformat(value), time()) if len(value) == 10
              else datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        raise Refused("invalid_attributes") from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def merged_attributes(current: Mapping[str, Any] | None, given: Mapping[str, Any]) -> dict[str, Any] | None:
    """`current` with the names `given` sets (None removes one), checked as a whole."""
    if not isinstance(given, Mapping):
        raise Refused("invalid_attributes")
    return checked_attributes({**(current or {}), **given})


def scope_of(attributes: Any) -> tuple[str | None, ...]:
    """The scope a memory's attributes place it in: its agent, app and run ids (None for each it
    lacks; all None for a memory of the person's own). Part of what a memory is (issue 39): the same
    words under another scope are another memory. Anything but a mapping is no scope."""
    have = attributes if isinstance(attributes, Mapping) else {}
    return tuple(have.get(name) for name in ENTITY_NAMES)


def is_immutable(attributes: Any) -> bool:
    """mem0's `immutable`: a memory the model's later learning never corrects and a near repeat never
    replaces (the person, and an explicit update, still may)."""
    return isinstance(attributes, Mapping) and attributes.get("immutable") is True


def matches(attributes: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> bool:
    """Whether a memory's attributes hold every `wanted` entity id (equality), category (each one
    listed) and metadata key (equal value), and of each group in `any_of` (an OR of such wants) one."""
    have = attributes or {}
    for group in wanted.get("any_of", ()):
        if not any(matches(attributes, alternative) for alternative in group):
            return False
    for name, value in wanted.items():
        if name in ENTITY_NAMES and have.get(name) != value:
            return False
        if name == "categories" and not set(value) <= set(have.get("categories") or ()):
            return False
        if name == "metadata" and any((have.get("metadata") or {}).get(k) != v for k, v in value.items()):
            return False
    return True


def expiry_of_day(value: Any) -> str | None:
    """mem0's `expiration_date` (a day) as a memory's expiry, so that it really goes: the end of that
    day in UTC, the next day at 00:00Z, as RFC 3339 (None for none; Refused `invalid_attributes` as
    the attribute itself is; InvalidArgument `invalid_expiry` for the calendar's last day, whose end
    is no moment a date can hold)."""
    if value is None:
        return None
    day = date.fromisoformat((checked_attributes({"expiration_date": value}) or {})["expiration_date"])
    if day == date.max:
        raise InvalidArgument("invalid_expiry")
    return datetime.combine(day + timedelta(days=1), time(), UTC).isoformat()
