"""Signing in and out: wrong passwords, the rate limit, `next`, and what the session cookie allows."""

from __future__ import annotations

import pytest
from flask import session

from .conftest import PASSWORD, World, page_text, sign_in


def test_sign_in_then_out(world: World) -> None:
    client = world.client()
    assert "Sign in" in page_text(client.get("/login"))
    answer = sign_in(client, "ADA@example.com ")  # e-mail case and stray spaces do not matter
    assert answer.headers["Location"] == "/memories"
    assert "Ada Lovelace" in page_text(client.get("/memories"))
    assert client.get("/login").headers["Location"] == "/memories"  # already signed in

    out = client.post("/logout")
    assert out.status_code == 303 and out.headers["Location"] == "/login"
    assert "You are signed out." in page_text(client.get("/login"))
    assert client.get("/memories").headers["Location"].startswith("/login")


@pytest.mark.parametrize("email,password", [("ada@example.com", "wrong password!"), ("nobody@example.com", PASSWORD)])
def test_wrong_credentials_answer_401_with_the_error(world: World, email: str, password: str) -> None:
    client = world.client()
    answer = client.post("/login", data={"email": email, "password": password})
    assert answer.status_code == 401
    # The same words for an unknown e-mail and a wrong password: nothing tells which accounts exist.
    assert "That e-mail and password do not match an account." in page_text(answer)
    assert client.get("/memories").status_code == 302


def test_login_error_in_the_browsers_language(world: World) -> None:
    answer = world.client().post(
        "/login", data={"email": "ada@example.com", "password": "nope nope nope"}, headers={"Accept-Language": "fr-FR,fr;q=0.9"}
    )
    assert answer.status_code == 401
    assert "Cette adresse e-mail et ce mot de passe ne correspondent à aucun compte." in page_text(answer)
    assert '<html lang="fr">' in answer.get_data(as_text=True)


def test_login_rate_limit(world: World) -> None:
    client = world.client(LOGIN_RATE_LIMIT="3/minute")
    for _ in range(3):
        assert client.post("/login", data={"email": "ada@example.com", "password": "guess guess"}).status_code == 401
    fourth = client.post("/login", data={"email": "ada@example.com", "password": PASSWORD})
    assert fourth.status_code == 429
    # a page of the site (its stylesheet, its heading, the wait said), not a bare line of text
    html = fourth.get_data(as_text=True)
    assert 'rel="stylesheet"' in html and "<h1>Too many tries</h1>" in html and fourth.headers["Retry-After"]
    # Even the right password is not let in while the limit holds, and reading the form is not limited.
    assert client.get("/memories").status_code == 302
    assert client.get("/login").status_code == 200


@pytest.mark.parametrize(
    "next_url,lands_on",
    [
        ("/memories?kind=goal", "/memories?kind=goal"),
        ("/account/erase", "/account/erase"),
        ("https://evil.example/steal", "/memories"),
        ("//evil.example/steal", "/memories"),
        ("/\\evil.example", "/memories"),
        ("javascript:alert(1)", "/memories"),
        ("http://localhost.evil.example/", "/memories"),
    ],
)
def test_next_stays_on_this_site(world: World, next_url: str, lands_on: str) -> None:
    client = world.client()
    answer = client.post("/login", query_string={"next": next_url}, data={"email": "ada@example.com", "password": PASSWORD})
    assert answer.status_code == 303
    assert answer.headers["Location"] == lands_on


def test_anonymous_visit_comes_back_after_sign_in(world: World) -> None:
    client = world.client()
    bounce = client.get("/memories?kind=goal")
    assert bounce.status_code == 302
    login_url = bounce.headers["Location"]
    assert login_url.startswith("/login?next=")
    answer = client.post(login_url, data={"email": "ada@example.com", "password": PASSWORD})
    assert answer.headers["Location"] == "/memories?kind=goal"


def test_session_cookie_is_httponly_and_lax(world: World) -> None:
    answer = sign_in(world.client(), "ada@example.com")
    cookies = {c.split("=", 1)[0]: c for c in answer.headers.getlist("Set-Cookie")}
    assert set(cookies) == {"session", "portal_device"}  # the device cookie: see portal.web.throttle
    for cookie in cookies.values():
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
        assert "Secure" not in cookie  # plain http (development): a Secure cookie would never come back
    assert "Path=/login" in cookies["portal_device"]  # sent to the sign-in page only


def test_session_cookie_is_secure_over_tls(world: World) -> None:
    client = world.client()
    answer = sign_in(client, "ada@example.com", base_url="https://localhost")
    for cookie in answer.headers.getlist("Set-Cookie"):
        assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert answer.headers["Strict-Transport-Security"].startswith("max-age=")
    assert client.get("/memories", base_url="https://localhost").status_code == 200


def test_home_sends_each_visitor_to_the_right_page(world: World) -> None:
    assert world.client().get("/").headers["Location"] == "/login"
    assert world.client(world.ada).get("/").headers["Location"] == "/memories"



def test_secure_flag_follows_each_request_not_the_last_one(world: World) -> None:
    """A plain-http request answered while a TLS request is in flight (a load balancer's probe on
    another thread) must not strip Secure from the TLS request's session cookie."""
    app = world.app()
    with app.test_request_context("/login", base_url="https://localhost"):
        app.preprocess_request()  # the TLS request starts...
        assert app.test_client().get("/healthz").status_code == 200  # ...a plain-http probe is answered...
        session["signed"] = True  # ...and the TLS request sets its session
        response = app.process_response(app.response_class("ok"))
    assert "Secure" in response.headers["Set-Cookie"]
