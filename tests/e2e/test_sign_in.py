"""Signing in: the page a person meets first, the error for a wrong password, their memories after."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Page, expect

from portal.cli import DEMO_LEARNT, DEMO_MEMORIES

from ..screenshots import screenshot
from .conftest import LiveServer, Person, sign_in


def test_a_wrong_password_says_so_and_the_right_one_opens_my_memories(
    page: Page, live_server: LiveServer, person: Person
) -> None:
    page.goto(live_server.url + "/memories")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    asked = urlsplit(page.url)
    assert (asked.path, parse_qs(asked.query).get("next")) == ("/login", ["/memories"]), page.url
    screenshot(page, "sign-in.png")

    sign_in(page, live_server.url, person, password="not the password")
    expect(page.get_by_role("alert")).to_have_text("That e-mail and password do not match an account.")
    expect(page.get_by_role("heading", name="What your assistant remembers about you")).to_have_count(0)

    sign_in(page, live_server.url, person)
    expect(page).to_have_url(f"{live_server.url}/memories")
    expect(page.get_by_role("heading", name="What your assistant remembers about you")).to_be_visible()
    rows = page.get_by_test_id("memory")
    expect(rows).to_have_count(len(DEMO_MEMORIES) + len(DEMO_LEARNT))
    # Newest first: what the assistant learnt in the last conversation leads, marked as new.
    learnt = DEMO_LEARNT[0][0]
    expect(rows.first).to_contain_text(learnt)
    expect(rows.first).to_contain_text("The assistant learnt it")
    expect(rows.first.get_by_text("New", exact=True)).to_be_visible()
    expect(page.get_by_text(DEMO_MEMORIES[0][0])).to_be_visible()
    expect(page.get_by_test_id("ai-off")).to_have_count(0)  # the AI is on in this tenant
    screenshot(page, "memories.png")

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_test_id("toast")).to_contain_text("You are signed out.")
    page.goto(live_server.url + "/memories")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
