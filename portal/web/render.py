"""Answering a full page or, for htmx, only the fragment that changed."""

from __future__ import annotations

from typing import Any

from flask import Response, make_response, render_template, request


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def page_or_fragment(page: str, fragment: str, status: int = 200, **context: Any) -> Response:
    """The full page for a browser, the fragment for htmx; caches keep the two apart."""
    response = make_response(render_template(fragment if is_htmx() else page, **context), status)
    response.headers["Vary"] = "HX-Request"
    return response
