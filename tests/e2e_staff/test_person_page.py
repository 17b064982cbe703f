"""A person's page as staff read it on a desktop (issue 38, item 14): the connected apps table, ten
columns of an app's counts, ran past the right edge of its card at 1280 px; it now stays inside
it, in English and in French, with a long app name and a time in every row."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from portal.domain.apps import app_of

from ..screenshots import screenshot
from .conftest import PASSWORD, VIEWPORT, Desk, LiveServer

# How far each table of the page reaches past its card (px), whether the card scrolls sideways, and
# whether the page does.
OVERFLOW = """() => Array.from(document.querySelectorAll('main section.card table')).map(table => {
  const card = table.closest('section.card');
  return [table.getAttribute('aria-label'), Math.round(table.getBoundingClientRect().right - card.getBoundingClientRect().right),
          card.scrollWidth > card.clientWidth + 1, document.documentElement.scrollWidth > innerWidth];
})"""


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_apps_table_stays_inside_its_card_at_1280px(browser: Browser, live_server: LiveServer, desk: Desk,
                                                      language: str) -> None:
    runtime = live_server.runtime
    for name in ("Claude Desktop for the whole support team", "Support bot"):
        key, _token = runtime.api_keys.create(desk.person.tenant_id, ("memories:read",), name=name)
        runtime.service.for_app(app_of(key), conversation_ref="c-1").recall(desk.person.place, "bees")
    runtime.accounts.set_language(desk.staff.id, language)
    context = browser.new_context(viewport=VIEWPORT, locale="en-GB")
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/login")
        page.get_by_label("Email").fill(desk.staff.email)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{live_server.url}/staff/")
        page.goto(f"{live_server.url}/staff/people/{desk.person.id}")
        expect(page.get_by_test_id("staff-apps").get_by_role("row")).to_have_count(3)
        seen = page.evaluate(OVERFLOW)
        assert [t for t in seen if t[1] > 0 or t[2] or t[3]] == [], seen
        screenshot(page, f"staff-person-apps-{language}.png")
    finally:
        context.close()
