"""Errors of the API client, one class per family of HTTP answer, built from the problem+json body.

Refusals stay codes (`empty`, `too_long`, `paused`, `ai_disabled`, ...): a caller branches on
`error.code`, never on a sentence.
"""

from __future__ import annotations

from typing import Any

import httpx


class ApiError(Exception):
    """An answer that is no success (3xx, 4xx, 5xx): `status`, the stable `code`, a `detail` for people, and for a
    compare-and-set conflict the memory's `actual_revision`."""

    def __init__(self, status: int, code: str, detail: str | None = None, actual_revision: int | None = None) -> None:
        super().__init__(f"{status} {code}" + (f": {detail}" if detail else ""))
        self.status = status
        self.code = code
        self.detail = detail
        self.actual_revision = actual_revision


class BadRequest(ApiError):
    """400: malformed JSON or a body or query of the wrong shape."""


class Unauthorized(ApiError):
    """401: no key, an unknown key or a revoked key."""


class Forbidden(ApiError):
    """403: the key lacks the permission the endpoint needs."""


class NotFound(ApiError):
    """404: no such memory for this person in this tenant (also another person's or tenant's id)."""


class Conflict(ApiError):
    """409: a stale `if_revision` (see `actual_revision`), or an idempotency key reused for another request."""


class PayloadTooLarge(ApiError):
    """413: the body is over the endpoint's limit."""


class Refused(ApiError):
    """422: the service refused the write; `code` says why."""


class RateLimited(ApiError):
    """429: too many requests for this key; wait `retry_after` seconds."""

    def __init__(self, status: int, code: str, detail: str | None = None, actual_revision: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(status, code, detail, actual_revision)
        self.retry_after = retry_after


class Redacted(ApiError):
    """A replayed write (same Idempotency-Key) whose memory was forgotten since: the write was
    applied once, and its stored answer was erased with the memory."""


CLASSES: dict[int, type[ApiError]] = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound,
                                      409: Conflict, 413: PayloadTooLarge, 422: Refused}


def error_of(response: httpx.Response) -> ApiError:
    """The error an answer of 3xx/4xx/5xx class stands for; a body that is no problem+json (a proxy's
    page) still gives an ApiError, with the code `http_<status>`."""
    status = response.status_code
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    code = body.get("code") if isinstance(body.get("code"), str) else f"http_{status}"
    detail = body.get("detail") if isinstance(body.get("detail"), str) else None
    revision = body.get("actual_revision") if isinstance(body.get("actual_revision"), int) else None
    if status == 429:
        return RateLimited(status, code, detail, revision, _seconds(response.headers.get("Retry-After")))
    return CLASSES.get(status, ApiError)(status, code, detail, revision)


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class InvalidId(ValueError):
    """An owner or memory id that is not an id (empty, too long, ".", "..", or holding "/" or a
    control character): refused before a request is sent, since it could change the route. Other
    characters ("?", "#", "%"...) are sent percent-encoded and stay inside their segment."""

    code = "invalid_id"

    def __init__(self) -> None:
        super().__init__("not an id: 1 to 200 characters, no control character, \"/\" or dot segment")
