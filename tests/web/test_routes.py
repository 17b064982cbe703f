"""Rules that hold for every portal route, read from the app's URL map so that a new route is
checked the day it is added: a POST-only route refuses GET (a link or an <img> cannot change
anything), and a visitor who is not signed in is sent to the sign-in page and changes nothing."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from flask import Flask

from .conftest import HX, World

# Routes anyone may open: the sign-in form, the front door, probes, metrics and static files.
PUBLIC = {"auth.login", "memories.home", "health.healthz", "health.readyz", "health.favicon", "metrics", "static"}


def portal_routes(app: Flask) -> list[tuple[str, str, str]]:
    """(endpoint, path with placeholder ids, methods) of every route outside the bearer-token API."""
    routes = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith(("api.", "mem0.")) or rule.endpoint in PUBLIC:
            continue
        path = rule.rule
        for argument in rule.arguments:
            path = path.replace(f"<{argument}>", "0123456789abcdef")
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            routes.append((rule.endpoint, method, path))
    return routes


def test_the_map_holds_the_portal(world: World) -> None:
    endpoints = {endpoint for endpoint, _, _ in portal_routes(world.app())}
    assert {"memories.index", "memories.add", "memories.save", "account.erase", "account.pause", "auth.logout"} <= endpoints


def test_post_routes_refuse_get(world: World) -> None:
    app = world.app()
    client = app.test_client()
    client.post("/login", data={"email": "ada@example.com", "password": "correct horse battery"})
    rules = [rule for rule in app.url_map.iter_rules() if not rule.endpoint.startswith(("api.", "mem0."))]
    readable = {rule.rule for rule in rules if "GET" in (rule.methods or set())}  # /memories is GET index + POST add
    post_only = [rule for rule in rules if "POST" in (rule.methods or set()) and rule.rule not in readable]
    assert len(post_only) >= 10
    memory = world.remember(world.ada, "I like walnuts")
    for rule in post_only:
        path = rule.rule
        for argument in rule.arguments:
            path = path.replace(f"<{argument}>", memory.id)
        for headers in ({}, HX):
            answer = client.get(path, headers=headers)
            assert answer.status_code == 405, (rule.endpoint, answer.status_code)
            assert "POST" in answer.headers["Allow"]
    # None of those GETs changed anything: still signed in, not paused, the memory still there.
    assert client.get("/memories").status_code == 200
    assert not world.runtime.service.is_paused(world.ada.place)
    assert world.texts(world.ada) == ["I like walnuts"]


def test_anonymous_visitors_are_sent_to_sign_in(world: World) -> None:
    memory = world.remember(world.ada, "I like walnuts")
    client = world.client()
    for endpoint, method, path in portal_routes(world.app()):
        path = path.replace("0123456789abcdef", memory.id)
        answer = client.open(path, method=method, data={"text": "x", "confirm": "ada@example.com", "language": "fr"})
        assert answer.status_code in (302, 303), (endpoint, method, answer.status_code)
        location = urlsplit(answer.headers["Location"])
        assert location.path == "/login", (endpoint, location)
        # After signing in, a page comes back; a POST's URL is no page and is not replayed.
        assert parse_qs(location.query).get("next") == ([path] if method == "GET" else None), endpoint
    assert world.texts(world.ada) == ["I like walnuts"]
    assert not world.runtime.service.is_paused(world.ada.place)
    assert world.runtime.accounts.get(world.ada.id).language == "en"  # type: ignore[union-attr]


def test_htmx_without_a_session_sends_the_window_to_sign_in(world: World) -> None:
    """A session that ended while the page was open: htmx must not swap the sign-in page into a row."""
    memory = world.remember(world.ada, "I like walnuts")
    client = world.client()
    here = {**HX, "HX-Current-URL": "http://localhost/memories?kind=goal"}
    for endpoint, method, path in portal_routes(world.app()):
        path = path.replace("0123456789abcdef", memory.id)
        answer = client.open(path, method=method, data={"text": "x", "pinned": "1"}, headers=here)
        assert answer.status_code == 401, (endpoint, method, answer.status_code)
        assert answer.get_data() == b"" and "Location" not in answer.headers
        assert answer.headers["HX-Redirect"] == "/login?next=/memories?kind%3Dgoal", endpoint
    elsewhere = client.post(f"/memories/{memory.id}/pin", headers={**HX, "HX-Current-URL": "https://evil.example/x"})
    assert elsewhere.headers["HX-Redirect"] == "/login?next=/memories"
    assert world.texts(world.ada) == ["I like walnuts"] and not world.memory(world.ada, memory.id).pinned
