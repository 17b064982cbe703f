"""The portal's one answer to each error: a page, or for htmx the fragment to swap.

The services raise one family of errors (portal.domain.errors). Here each has one handler:

- `NotFound`, like an HTTP 404: the "not found" page (problem+json under /api, whatever raised it).
- `Refused(code)` and `Conflict`: the refusal in the person's words, answered by the view's own
  `@refusals(answer)` (the edit form again with the reason, the row given back...) or, for a view
  without one, flashed on the page the form came from.
- `InvalidArgument` (a hand-made or outdated value), a form without a valid CSRF token (400) and a
  request from another site (403): their pages.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps
from typing import Any, TypeVar

from flask import Flask, flash, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import get_locale
from flask_babel import gettext as _
from flask_wtf.csrf import CSRFError

from portal.api import PREFIX
from portal.api.mem0_base import is_mem0_path, is_mem0_settings_path, not_found_here, settings_not_served
from portal.api.problems import problem
from portal.domain.catalog import DEFAULT_LANGUAGE, message
from portal.domain.errors import Conflict, InvalidArgument, InvalidWhere, NotFound, Refused
from portal.web.render import runtime

View = TypeVar("View", bound=Callable[..., ResponseReturnValue])
RefusalAnswer = Callable[..., ResponseReturnValue]


def refusal_text(code: str) -> str:
    """A refusal code in words, in the language the page is shown in (codes are for logs and tests)."""
    language = str(get_locale() or DEFAULT_LANGUAGE)
    # "too long" says how long may be: the one limit the service keeps (the forms say it too).
    values = {"count": runtime().service.options.max_text_length} if code == "too_long" else {}
    return (message(f"refused.{code}", language, **values) or message(f"refused.{code}", DEFAULT_LANGUAGE, **values)
            or code)


def refusals(answer: RefusalAnswer) -> Callable[[View], View]:
    """How a view answers a refusal of its service call: `answer(text, **view_arguments)`."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(**arguments: Any) -> ResponseReturnValue:
            g.refusal_answer = partial(answer, **arguments)
            return view(**arguments)

        return wrapped  # type: ignore[return-value]

    return decorate


def install(app: Flask) -> None:
    app.register_error_handler(404, not_found)
    app.register_error_handler(NotFound, not_found)
    app.register_error_handler(Refused, refused)
    app.register_error_handler(Conflict, refused)
    app.register_error_handler(InvalidArgument, bad_request)
    app.register_error_handler(InvalidWhere, bad_request)
    app.register_error_handler(403, forbidden)
    app.register_error_handler(CSRFError, expired_form)


def under_api() -> bool:
    return request.path in ("/api", PREFIX) or request.path.startswith("/api/")


def not_found(exc: Exception) -> ResponseReturnValue:
    routed = request.url_rule is not None  # else no route took the path: an endpoint not served, no missing memory
    if is_mem0_settings_path(request.path) and not routed:
        return settings_not_served()  # mem0's clients read JSON only
    if under_api():
        return problem(404, "not_found" if routed else "not_served")  # every error under /api/ is problem+json
    if is_mem0_path(request.path):
        return not_found_here()  # mem0's clients read JSON only
    return render_template("errors/404.html"), 404


def refused(exc: Refused | Conflict) -> ResponseReturnValue:
    text = refusal_text(exc.code)
    answer: RefusalAnswer | None = g.pop("refusal_answer", None)
    if answer is not None:
        return answer(text)
    flash(text, "error")
    return redirect(url_for("memories.index"), 303)


def bad_request(exc: InvalidArgument | InvalidWhere) -> ResponseReturnValue:
    """A form or link with a value out of range (hand-made, or from an older page)."""
    return render_template("errors/400.html", message=refusal_text(exc.code)), 400


def forbidden(exc: Exception) -> ResponseReturnValue:
    """403 in the portal: a request from another site (portal.web.security.refuse_other_origins)."""
    return render_template("errors/403.html"), 403


def expired_form(exc: Exception) -> ResponseReturnValue:
    """A form whose CSRF token is missing, expired or from before signing in."""
    text = _("This form has expired or was not sent from this page. Go back, reload the page and try again.")
    return render_template("errors/400.html", message=text), 400
