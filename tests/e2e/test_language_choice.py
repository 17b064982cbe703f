"""The portal's language, as a person meets it in Chromium (issue 38, item 2): someone who never
chose one reads the sign-in page and, once signed in, their memories in their browser's language
(French here; it used to turn English at sign-in, the account's stored default); the switch at the
top of every page is a button per language, each a 44 px target on a desktop and on a phone (it
was a 61x21 select and a button), pressed for the page's language; pressing one keeps that
choice, with JavaScript and without; axe finds nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from ..axe import violations
from ..screenshots import screenshot
from .conftest import LiveServer, Person, make_person

PHONE = {"width": 375, "height": 812}
SWITCH = """() => Array.from(document.querySelectorAll('form.languages button')).map(b => {
  const r = b.getBoundingClientRect();
  return [b.textContent.trim(), b.getAttribute('aria-pressed'), Math.round(r.width), Math.round(r.height)]; })"""


def sign_in_by_field(page: Page, base: str, who: Person) -> None:
    """The sign-in form by its fields (their labels are in the page's language)."""
    page.goto(f"{base}/login")
    page.locator("#email").fill(who.email)
    page.locator("#password").fill(who.password)
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(f"{base}/memories")


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_a_person_who_never_chose_reads_their_browsers_language_and_chooses_with_a_button(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, device: str,
) -> None:
    who = make_person(live_server.runtime, language=None)  # as `user create` without --language makes it
    options = {"locale": "fr-FR", "bypass_csp": True, **({"viewport": PHONE} if device == "phone" else {})}
    page = new_context(**options).new_page()
    page.goto(f"{live_server.url}/login")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page.get_by_role("heading", level=1)).to_have_text("Se connecter")
    sign_in_by_field(page, live_server.url, who)
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page.get_by_role("heading", level=1)).to_have_text("Ce dont votre assistant se souvient à votre sujet")
    switch = page.evaluate(SWITCH)
    assert [(name, pressed) for name, pressed, _w, _h in switch] == [("English", "false"), ("Français", "true")]
    assert [s for s in switch if s[2] < 44 or s[3] < 44] == [], switch
    assert violations(page, f"the memories, in the browser's French ({device})") == []
    screenshot(page, f"language-switch-{device}.png")

    page.get_by_role("group", name="Langue").get_by_role("button", name="English").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.reload()
    expect(page.get_by_role("heading", level=1)).to_have_text("What your assistant remembers about you")
    expect(page.get_by_role("button", name="English")).to_have_attribute("aria-pressed", "true")
    (account,) = live_server.runtime.accounts.find(who.email)
    assert account.language == "en"


def test_the_switch_works_without_javascript(new_context: Callable[..., BrowserContext], live_server: LiveServer) -> None:
    who = make_person(live_server.runtime, language=None)
    page = new_context(locale="en-GB", java_script_enabled=False).new_page()
    sign_in_by_field(page, live_server.url, who)
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.get_by_role("group", name="Language").get_by_role("button", name="Français").click()
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page).to_have_url(f"{live_server.url}/memories")
    expect(page.get_by_role("button", name="Français")).to_have_attribute("aria-pressed", "true")
