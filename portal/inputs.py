"""What may come in: one rule for ids and one for text, the same on every store and every shell
(the service layer, the JSON API and its Python client, the portal). No dependencies: the client
uses it as it is.

Text (a memory, a query, a role, a name, a search) may hold any character a database can keep:
not a NUL (PostgreSQL refuses it in text, SQLite cuts strings at it) and not a lone surrogate (a
JSON escape such as "\\ud800" makes one; it has no UTF-8 form at all). An id (an owner id, a
memory id, a conversation ref, a tenant) is such a text of 1 to 200 characters that is not blank,
holds no control character and can never change the route it is put in once each path segment is
percent-encoded: not "." or ".." (clients and proxies resolve dot segments even encoded) and no
"/" (a WSGI server decodes %2F back into a separator). "?", "#", "%" and the like are fine:
encoded, they stay inside their segment. Callers answer a bad one with a stable code (`invalid_text`, `invalid_id`,
`invalid_owner`); nothing invalid reaches a database, where it would fail with an error that could
carry the person's words.

A moment (an expiry, a time filter, a cursor's time) is an aware datetime or ISO 8601 text with
its offset that exists in UTC: the calendar ends at years 1 and 9999, so
"9999-12-31T23:59:59-05:00" or "0001-01-01T00:00:00+05:00" is none (`moment_in_utc`).
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

MAX_ID_LENGTH = 200
MAX_MOMENT_LENGTH = 64
MAX_JSON_DEPTH = 64
MAX_JSON_INT = 2**63  # what every database column and every float can hold
_UNKEEPABLE = re.compile("[\x00\ud800-\udfff]")
_NOT_IN_IDS = re.compile("[\x00-\x1f\x7f-\x9f/\ud800-\udfff]")


def is_valid_text(value: object) -> bool:
    """A string a database can keep as it is (no NUL, no lone surrogate)."""
    return isinstance(value, str) and _UNKEEPABLE.search(value) is None


def is_valid_id(value: object) -> bool:
    """An id by the rule of the module docstring."""
    return (
        isinstance(value, str) and 0 < len(value) <= MAX_ID_LENGTH and bool(value.strip())
        and value not in (".", "..") and _NOT_IN_IDS.search(value) is None
    )


def moment_in_utc(value: object, naive_is_utc: bool = False) -> datetime:
    """A moment by the rule of the module docstring, in UTC: an aware datetime, or ISO 8601 text
    (RFC 3339, "Z" too) of at most MAX_MOMENT_LENGTH characters with its offset (`naive_is_utc`:
    one without is read as UTC). ValueError for anything else, a moment with no UTC form included
    (converting it raised OverflowError, a 500 wherever it was not caught)."""
    if isinstance(value, str):
        if len(value) > MAX_MOMENT_LENGTH:
            raise ValueError("too long for a time")
        value = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if not isinstance(value, datetime):
        raise ValueError("not a time")
    if value.tzinfo is None or value.utcoffset() is None:
        if not naive_is_utc:
            raise ValueError("a time without its offset could be any moment")
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("no such moment in UTC") from None


class BadJson(ValueError):
    """A JSON value outside what the service takes, with a stable code."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(code)
        self.code = code
        self.detail = detail


def check_json(value: Any) -> None:
    """Raise BadJson for a parsed JSON value nested deeper than MAX_JSON_DEPTH (`json_too_deep`),
    holding a string that is not valid text, key or value (`invalid_text`), or a number that is not
    finite (`invalid_request`: NaN, Infinity, 1e999). Iterative, so no depth can exhaust the stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise BadJson("json_too_deep", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(node, str):
            if not is_valid_text(node):
                raise BadJson("invalid_text", "a string holds a NUL or a lone surrogate")
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise BadJson("invalid_request", "numbers must be finite")
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_JSON_INT:
            raise BadJson("invalid_request", "numbers must be finite")  # 1 and 400 zeros has no float
        elif isinstance(node, dict):
            for key, item in node.items():
                if not is_valid_text(key):
                    raise BadJson("invalid_text", "a key holds a NUL or a lone surrogate")
                stack.append((item, depth + 1))
        elif isinstance(node, list):
            stack.extend((item, depth + 1) for item in node)


def load_json(raw: str | bytes) -> Any:
    """Parse JSON the service takes: `check_json`'s rules, and never a RecursionError; ValueError
    (not BadJson) when it is not JSON at all."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise BadJson("json_too_deep", f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    check_json(value)
    return value
