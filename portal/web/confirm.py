"""Destructive actions ask first, with or without JavaScript.

With htmx the button's `hx-confirm` asks in the browser before the request is sent. A plain form
(JavaScript off, or a form that has no htmx) would act at once: `asks_first` answers such a POST
with a page holding the question, the same form again with `confirmed=1`, and a way back. Only
the confirmed POST, or one htmx sent after its own confirmation, reaches the view.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar, cast

from flask import render_template, request
from flask.typing import ResponseReturnValue

from portal.web.render import is_htmx

View = TypeVar("View", bound=Callable[..., ResponseReturnValue])


@dataclass(frozen=True)
class Ask:
    """What the page asks: the question, the confirm button's label, where "Cancel" goes, and
    what the action concerns (a memory's text) when the question alone does not say."""

    question: str
    label: str
    back: str
    detail: str | None = None


Asking = Callable[..., Ask]


def asks_first(asking: Asking) -> Callable[[View], View]:
    def decorate(view: View) -> View:
        @wraps(view)
        def inner(**arguments: Any) -> ResponseReturnValue:
            if is_htmx() or request.form.get("confirmed") == "1":
                return view(**arguments)
            ask = asking(**arguments)  # may raise NotFound: nothing to ask about
            kept = [(k, v) for k, v in request.form.items(multi=True) if k not in ("csrf_token", "confirmed")]
            return render_template("confirm.html", question=ask.question, label=ask.label, back=ask.back,
                                   detail=ask.detail, action=request.path, fields=kept)

        inner.asks_first = True  # type: ignore[attr-defined]  # how tests/e2e/test_every_page.py finds these pages
        return cast(View, inner)

    return decorate
