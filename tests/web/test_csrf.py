"""CSRF with the protection switched on, as in production: a forged POST changes nothing, while the
token a page carries is accepted as a form field (plain forms) and as the X-CSRFToken header that
htmx sends from `hx-headers` on <body>."""

from __future__ import annotations

import json
import re

import pytest
from flask.testing import FlaskClient

from .conftest import HX, PASSWORD, World, csrf_token_of, page_text


@pytest.fixture
def browser(world: World) -> FlaskClient:
    """Ada signed in through the real form, token and all, on an app with CSRF on."""
    client = world.app(csrf=True).test_client()
    token = csrf_token_of(client.get("/login"))
    answer = client.post("/login", data={"email": "ada@example.com", "password": PASSWORD, "csrf_token": token})
    assert answer.status_code == 303
    return client


def htmx_token(client: FlaskClient) -> str:
    """The token exactly where htmx reads it: the JSON of `hx-headers` on <body>."""
    html = client.get("/memories").get_data(as_text=True)
    found = re.search(r"<body hx-headers='([^']+)'>", html)
    assert found, "no hx-headers on <body>"
    return str(json.loads(found.group(1))["X-CSRFToken"])


def test_sign_in_without_a_token_is_refused(world: World) -> None:
    client = world.app(csrf=True).test_client()
    answer = client.post("/login", data={"email": "ada@example.com", "password": PASSWORD})
    assert answer.status_code == 400
    assert "CSRF" in answer.get_data(as_text=True)
    assert client.get("/memories").status_code == 302  # not signed in


def test_tokenless_posts_are_refused_and_change_nothing(world: World, browser: FlaskClient) -> None:
    memory = world.remember(world.ada, "I grow tomatoes")
    forged = [
        ("/memories", {"text": "Planted by a forged form"}),
        (f"/memories/{memory.id}", {"text": "Rewritten by a forged form", "revision": "1"}),
        (f"/memories/{memory.id}/forget", {}),
        ("/account/pause", {}),
        ("/account/erase", {"confirm": "ada@example.com"}),
        ("/account/language", {"language": "fr"}),
        ("/logout", {}),
    ]
    for path, data in forged:
        assert browser.post(path, data=data).status_code == 400, path
        assert browser.post(path, data=data, headers=HX).status_code == 400, path
        assert browser.post(path, data=data, headers={"X-CSRFToken": "not-a-token"}).status_code == 400, path
    assert world.texts(world.ada) == ["I grow tomatoes"]
    assert not world.runtime.service.is_paused(world.ada.place)
    page = browser.get("/memories")
    assert page.status_code == 200 and "I grow tomatoes" in page_text(page)  # still signed in, still English
    assert '<html lang="en">' in page.get_data(as_text=True)


def test_the_form_token_from_the_page_is_accepted(world: World, browser: FlaskClient) -> None:
    token = csrf_token_of(browser.get("/memories"))
    answer = browser.post("/memories", data={"text": "I swim on Sundays", "kind": "event", "csrf_token": token})
    assert answer.status_code == 303
    assert world.texts(world.ada) == ["I swim on Sundays"]


def test_the_htmx_header_token_is_accepted(world: World, browser: FlaskClient) -> None:
    token = htmx_token(browser)
    answer = browser.post("/memories", data={"text": "I read in the evening"}, headers={**HX, "X-CSRFToken": token})
    assert answer.status_code == 200
    assert "I read in the evening" in page_text(answer)
    memory = world.runtime.service.list(world.ada.place).items[0]
    pinned = browser.post(f"/memories/{memory.id}/pin", data={"pinned": "1"}, headers={**HX, "X-CSRFToken": token})
    assert pinned.status_code == 200 and world.memory(world.ada, memory.id).pinned


def test_a_token_of_another_session_is_refused(world: World, browser: FlaskClient) -> None:
    other = world.app(csrf=True).test_client()
    stranger_token = csrf_token_of(other.get("/login"))
    answer = browser.post("/memories", data={"text": "Smuggled in", "csrf_token": stranger_token})
    assert answer.status_code == 400
    assert world.texts(world.ada) == []
