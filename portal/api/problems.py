"""application/problem+json answers with a stable `code`, and the handlers that make every error
under /api one of them (never an HTML page, never a 500 with a traceback). Every answer has a
`detail`: what its site says, else the code's text in the catalog (English), so a caller always
reads why, and a code never answers `"detail": null`."""

from __future__ import annotations

import json
import logging
from typing import Any

from flask import Blueprint, Response, current_app, g
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import HTTPException

from portal.api.limits import seconds_until_reset
from portal.api.schemas import Problem
from portal.domain.catalog import DEFAULT_LANGUAGE, message
from portal.domain.errors import Conflict, InvalidArgument, InvalidWhere, MemoryServiceError, NotFound, Refused, Unavailable
from portal.services.idempotency import KeyReused, StillRunning

log = logging.getLogger("portal.api")

TITLES = {
    400: "Bad request", 401: "Unauthorized", 403: "Forbidden", 404: "Not found", 405: "Method not allowed",
    409: "Conflict", 413: "Payload too large", 414: "URI too long", 415: "Unsupported media type", 422: "Refused",
    429: "Too many requests", 500: "Internal error", 503: "Unavailable",
}
HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "body_too_large",
              414: "uri_too_long", 415: "unsupported_media_type", 429: "rate_limited"}


class ApiProblem(Exception):
    def __init__(self, status: int, code: str, detail: str | None = None, **extra: Any) -> None:
        super().__init__(code)
        self.status = status
        self.code = code
        self.detail = detail
        self.extra = extra


def detail_of(code: str, detail: str | None = None) -> str:
    """A problem's `detail`: the site's own sentence, else the code's text in the catalog (a code
    without words of its own, such as a content rule's, gets the generic refusal)."""
    return detail or message(f"refused.{code}", DEFAULT_LANGUAGE) or code


def problem(status: int, code: str, detail: str | None = None, headers: dict[str, str] | None = None,
            **extra: Any) -> Response:
    body = {"type": "about:blank", "title": TITLES.get(status, "Error"), "status": status,
            "detail": detail_of(code, detail), "code": code, **extra}
    response = Response(json.dumps(body), status=status, mimetype="application/problem+json")
    response.headers.update(headers or {})
    return response


SERVICE_ANSWERS: dict[type[MemoryServiceError], tuple[int, str | None]] = {
    NotFound: (404, "no such memory for this person"),
    Conflict: (409, "the memory changed since"),
    Refused: (422, None),
    InvalidArgument: (400, "an argument is out of range"),
    InvalidWhere: (400, "a person is needed"),
    Unavailable: (503, "the memory is unavailable; retry shortly"),
}


# Refusals answered with a status of their own: the person blocked the calling app, or decides
# what it asked to change (the person's pause, how long what is learnt is kept).
REFUSAL_STATUS = {"app_blocked": (403, "the person has blocked this app"), "forbidden": (403, None),
                  "person_decides": (403, None)}
# Arguments the service checks that a caller chooses (issue 29): refused 422 as a remember's are,
# whichever call checks them, so a client meets one status for one code.
REFUSED_ARGUMENTS = {"invalid_expiry", "expiry_in_past", "invalid_conversation_ref", "invalid_use",
                     "withheld_from_every_app"}


def service_problem(exc: MemoryServiceError) -> tuple[int, Problem]:
    """The one answer to each error of the services' family: its status and a problem with its code."""
    status, detail = next((answer for kind, answer in SERVICE_ANSWERS.items() if isinstance(exc, kind)), (500, None))
    if isinstance(exc, NotFound):
        detail = f"no such {exc.what} for this person"
    if isinstance(exc, InvalidArgument) and exc.code in REFUSED_ARGUMENTS:
        status, detail = 422, None
    if isinstance(exc, Refused) and exc.code in REFUSAL_STATUS:
        status, detail = REFUSAL_STATUS[exc.code]
    return status, Problem(title=TITLES.get(status, "Error"), status=status, code=exc.code, detail=detail_of(exc.code, detail),
                           actual_revision=exc.actual_revision if isinstance(exc, Conflict) else None)


def http_problem(exc: HTTPException) -> Response:
    """An HTTP error (routing, size, method, rate) as problem+json, with the headers it needs:
    Retry-After on 429 (when the limit lets the caller in again), Allow on 405."""
    status = exc.code or 500
    headers: dict[str, str] = {}
    if status == 429:
        headers["Retry-After"] = str(seconds_until_reset(current_app))
    if status == 405 and getattr(exc, "valid_methods", None):
        headers["Allow"] = ", ".join(sorted(exc.valid_methods))  # type: ignore[attr-defined]
    return problem(status, HTTP_CODES.get(status, "error"), None, headers)


def install(bp: Blueprint) -> None:
    """Turn every error raised under the blueprint into problem+json."""

    @bp.errorhandler(ApiProblem)
    def _api_problem(exc: ApiProblem) -> Response:
        headers = {"WWW-Authenticate": 'Bearer realm="memory"'} if exc.status == 401 else None
        return problem(exc.status, exc.code, exc.detail, headers, **exc.extra)

    @bp.errorhandler(MemoryServiceError)
    def _service(exc: MemoryServiceError) -> Response:
        status, body = service_problem(exc)
        return problem(status, body.code, body.detail, **body.model_dump(include={"actual_revision"}, exclude_none=True))

    @bp.errorhandler(KeyReused)
    def _reused(exc: KeyReused) -> Response:
        return problem(409, exc.code, "this Idempotency-Key was used for another request")

    @bp.errorhandler(StillRunning)
    def _running(exc: StillRunning) -> Response:
        return problem(409, exc.code, "the first request with this key is still running", {"Retry-After": "1"})

    @bp.errorhandler(HTTPException)
    def _http(exc: HTTPException) -> Response:
        return http_problem(exc)

    @bp.errorhandler(DBAPIError)
    @bp.errorhandler(PoolTimeout)
    def _database(exc: Exception) -> Response:
        # The database went away (restart, failover, a dropped connection) or no connection was
        # free in time: a transient outage the caller should retry, not an error of ours. The
        # transaction was rolled back, so nothing was half-written.
        if isinstance(exc, OperationalError | PoolTimeout) or getattr(exc, "connection_invalidated", False):
            log.warning("api.database_unavailable route=%s error=%s", g.get("api_route"), type(exc).__name__)
            return problem(503, "database_unavailable", "the database is unavailable; retry shortly",
                           {"Retry-After": "1"})
        return _unexpected(exc)

    @bp.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        log.exception("api.error route=%s error=%s", g.get("api_route"), type(exc).__name__)
        return problem(500, "error", "an unexpected error; it was logged")
