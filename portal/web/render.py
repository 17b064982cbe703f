"""Answering a full page or, for htmx, only the fragment that changed; the templates' helpers."""

from __future__ import annotations

from typing import Any

from flask import Response, current_app, make_response, render_template, request
from flask_babel import gettext as _

from portal.bootstrap import Runtime


def runtime() -> Runtime:
    """The app's runtime (portal.app.create_app put it there): the services every view calls."""
    found: Runtime = current_app.extensions["memory_runtime"]
    return found


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def page_or_fragment(page: str, fragment: str, status: int = 200, **context: Any) -> Response:
    """The full page for a browser, the fragment for htmx; caches keep the two apart."""
    response = make_response(render_template(fragment if is_htmx() else page, **context), status)
    response.headers["Vary"] = "HX-Request"
    return response


def kind_label(kind: str) -> str:
    """A memory's kind in the person's language (templates: `kind_label(memory.kind)`)."""
    labels = {"goal": _("Goal"), "preference": _("Preference"), "fact": _("Fact"), "person": _("Person"),
              "event": _("Event"), "feeling": _("Feeling")}
    return labels.get(kind, kind)
