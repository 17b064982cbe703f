"""Pages, times and ids as callers send them: keyset cursors, time filters with their zone, lists of ids."""

from __future__ import annotations

import base64
import binascii
import builtins
import json
from datetime import datetime
from typing import Any

from portal.domain.errors import InvalidArgument
from portal.domain.queries import Cursor
from portal.domain.types import Memory, iso
from portal.inputs import is_valid_id, moment_in_utc


def encode_cursor(memory: Memory) -> str:
    raw = json.dumps([iso(memory.created_at), memory.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Cursor:
    """Read a cursor from `encode_cursor`; anything else is `invalid_cursor`."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created, memory_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(created, str) or not is_valid_id(memory_id):
            raise ValueError
        # In UTC here, as the database compares it: a moment that has no UTC form (year 1 an hour
        # east of Greenwich) is an invalid cursor, not an OverflowError deep in the driver.
        return Cursor(moment_in_utc(created), memory_id)
    except (ValueError, TypeError, RecursionError, binascii.Error, UnicodeError, json.JSONDecodeError):
        raise InvalidArgument("invalid_cursor") from None


def active(found: builtins.list[Memory]) -> dict[str, Memory]:
    """Hits read back by id, those still active: one archived since the ranking is not an answer."""
    return {m.id: m for m in found if m.state == "active"}


def moment(value: Any) -> datetime | None:
    """A time filter: a datetime with its time zone (a naive one could mean any zone), else
    `invalid_time`."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidArgument("invalid_time")
    try:
        return moment_in_utc(value)  # a moment with no UTC form (year 1, east of Greenwich) is invalid too
    except ValueError:
        raise InvalidArgument("invalid_time") from None


def ids_of(ids: Any) -> builtins.list[str]:
    if isinstance(ids, str) or not isinstance(ids, (list, tuple, set, frozenset)):
        raise InvalidArgument("invalid_ids")
    return [i for i in ids if isinstance(i, str)]
