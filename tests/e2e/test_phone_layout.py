"""What a phone's first screen and the connected apps page show (issue 27): a memory on the first
screen of "My memories" at 375x812, in English and in French, with nothing hidden; the Connected
apps cards line up with the page on a desktop (1280x800), not indented like a bulleted list."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, expect

from portal.domain.apps import app_of

from ..screenshots import screenshot
from .conftest import LiveServer, make_person, sign_in

PHONE = {"width": 375, "height": 812}


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_first_phone_screen_shows_a_memory(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, language: str
) -> None:
    who = make_person(live_server.runtime, language=language)
    page = new_context(viewport=PHONE).new_page()
    sign_in(page, live_server.url, who)
    expect(page.get_by_test_id("new-banner")).to_be_visible()  # the longest first screen: with the banner
    assert page.evaluate("scrollY") == 0
    first = page.locator("#memory-list > li").first.locator(".memory-text")
    box = first.bounding_box()
    assert box is not None and box["y"] + box["height"] <= PHONE["height"], f"the first memory's text ends at {box}"
    # nothing was hidden to get there: the pause button, the add form and the search are there
    for control in ("#pause-panel button", "#new-text", "#new-kind", "#add-form button.primary", "#q", "#filter-kind"):
        expect(page.locator(control)).to_be_visible()
    screenshot(page, f"memories-phone-first-screen-{language}.png")


def test_connected_apps_line_up_with_the_page(new_context: Callable[..., BrowserContext], live_server: LiveServer) -> None:
    who = make_person(live_server.runtime)
    key, _token = live_server.runtime.api_keys.create(who.place.scope, ("memories:read",), name="Support bot")
    live_server.runtime.service.for_app(app_of(key)).recall(who.place, "green tea")
    page = new_context().new_page()
    sign_in(page, live_server.url, who)
    page.goto(f"{live_server.url}/account/apps")
    heading = page.get_by_role("heading", level=1).bounding_box()
    card = page.get_by_test_id("app").bounding_box()
    assert heading is not None and card is not None
    assert abs(card["x"] - heading["x"]) < 1, f"the card is indented {card['x'] - heading['x']} px"
