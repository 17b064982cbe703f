"""The sign-in throttle (portal.web.throttle) against the real app, its counters in the store every
worker shares: guesses are stopped per account and address, a guesser does not lock out the people
behind the same address or the account's owner in their own browser (device cookies), an IPv6
/64 counts as one address, and the counters hold no e-mail or IP address."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from portal.adapters.sql.counters import rate_limit_counters
from portal.app import create_app

from .conftest import PASSWORD, Console


def app_of(console: Console, **config: Any) -> Flask:
    return create_app({"TESTING": True, "WTF_CSRF_ENABLED": False, **config}, runtime=console.runtime)


def login(client: FlaskClient, email: str, password: str, address: str) -> int:
    return int(client.post("/login", data={"email": email, "password": password},
                           environ_base={"REMOTE_ADDR": address}).status_code)


def test_guesses_past_the_limit_are_not_checked_even_the_right_password(console: Console) -> None:
    client = app_of(console).test_client()
    assert [login(client, console.a1.email, "guess", "198.51.100.1") for _ in range(6)] == [401] * 5 + [429]
    refused = client.post("/login", data={"email": console.a1.email, "password": PASSWORD},
                          environ_base={"REMOTE_ADDR": "198.51.100.1"}, headers={"Accept-Language": "fr"})
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert "Trop de tentatives" in refused.get_data(as_text=True)
    # The same account from another address is still let in: the guesser's address is the one stopped.
    assert login(app_of(console).test_client(), console.a1.email, PASSWORD, "198.51.100.2") == 303


def test_a_guesser_behind_an_office_address_does_not_lock_out_the_people_who_signed_in_there(console: Console) -> None:
    app = app_of(console, LOGIN_ADDRESS_LIMIT="10 per hour")  # the default is 100: the same, slower
    staff = app.test_client()
    assert login(staff, console.sA.email, PASSWORD, "198.51.100.7") == 303  # signed in here before
    staff.post("/logout")
    guesser = app.test_client()
    for i in range(11):
        login(guesser, f"nobody{i}@a.example", "guess", "198.51.100.7")
    assert login(guesser, "someone@a.example", "guess", "198.51.100.7") == 429  # the address is stopped...
    assert login(staff, console.sA.email, PASSWORD, "198.51.100.7") == 303  # ...its known browsers are not


def test_guesses_spread_over_addresses_do_not_lock_the_owner_out_of_their_own_browser(console: Console) -> None:
    app = app_of(console)
    owner = app.test_client()
    assert login(owner, console.admin.email, PASSWORD, "192.0.2.99") == 303
    owner.post("/logout")
    guesser = app.test_client()
    for n in range(5):
        for _ in range(5):
            login(guesser, console.admin.email, "guess", f"203.0.113.{n + 1}")
    assert login(guesser, console.admin.email, PASSWORD, "203.0.113.50") == 429  # the account is stopped...
    assert login(owner, console.admin.email, PASSWORD, "192.0.2.99") == 303  # ...in a new browser, not in theirs
    # A device cookie does not open the door to a guesser who copied it: it has its own 5 tries.
    copied = app.test_client()
    copied.set_cookie("portal_device", owner.get_cookie("portal_device", path="/login").value, path="/login")  # type: ignore[union-attr]
    assert [login(copied, console.admin.email, "guess", "203.0.113.9") for _ in range(6)][-1] == 429


def test_an_ipv6_slash64_counts_as_one_address(console: Console) -> None:
    client = app_of(console, LOGIN_ADDRESS_LIMIT="10 per hour").test_client()
    answers = [login(client, f"user{i}@a.example", "guess", f"2001:db8:1:2::{i + 1:x}") for i in range(30)]
    assert answers.count(401) == 10 and answers.count(429) == 20


def test_the_counters_hold_digests_only(console: Console) -> None:
    app = app_of(console)
    login(app.test_client(), console.a1.email, "guess", "198.51.100.33")
    with app.extensions["counters_engine"].connect() as conn:
        keys = " ".join(conn.execute(select(rate_limit_counters.c.key)).scalars())
    assert keys and console.a1.email not in keys and "198.51.100.33" not in keys
