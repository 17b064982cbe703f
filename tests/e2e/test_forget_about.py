"""Forget everything about … in Chromium (issue 29, item 4): from the list to the subject, its preview
with every matching memory ticked, one unticked, the confirmation, and the list without the others,
with its toast; with and without JavaScript, in English and in French, on a phone (375x812, every
control 44 px tall, nothing wider than the screen), and with axe finding no violation on any of it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from ..axe import violations
from ..screenshots import screenshot
from .conftest import CAT, LiveServer, Person, row, sign_in
from .test_every_page import MEASURE

SECOND_CAT = "Is thinking about adopting a second cat"
PHONE = {"width": 375, "height": 812}
WORDS = {
    "en": {"link": "Forget everything about…", "subject": "Subject to forget", "preview": "Preview",
           "forget": "Forget the ticked memories", "heading": "2 memories are about “cat”",
           "toast": "1 memory forgotten, with every earlier version."},
    "fr": {"link": "Tout oublier sur…", "subject": "Sujet à oublier", "preview": "Aperçu",
           "forget": "Oublier les souvenirs cochés", "heading": "2 souvenirs concernent « cat »",
           "toast": "1 souvenir oublié, avec toutes ses versions précédentes."},
}


def measured(page: Page, state: str) -> list[str]:
    """What the phone walk measures (tests/e2e/test_every_page.py): no sideways scroll, 44 px controls."""
    seen = page.evaluate(MEASURE)
    problems = [f"{state}: {seen['wide']} px wide at {seen['inner']}"] if seen["wide"] > seen["inner"] else []
    return problems + [f"{state}: under 44 px: {', '.join(seen['small'])}"] if seen["small"] else problems


def forget_about_cats(page: Page, base: str, who: Person, language: str, checks: Callable[[str], None]) -> None:
    """The person's way through it: the list's link, the subject, the preview, one unticked, confirmed."""
    said = WORDS[language]
    sign_in(page, base, who)
    page.get_by_role("link", name=said["link"]).click()
    expect(page).to_have_url(f"{base}/memories/forget-about")
    checks("the subject's form")
    page.get_by_label(said["subject"]).fill("cat")
    page.get_by_role("button", name=said["preview"]).click()
    expect(page.get_by_role("heading", name=said["heading"])).to_be_visible()
    items = page.get_by_test_id("forget-item")
    expect(items).to_have_count(2)
    for item in (CAT, SECOND_CAT):
        expect(page.get_by_role("checkbox", name=item)).to_be_checked()
    checks("the preview")
    page.get_by_role("checkbox", name=CAT).uncheck()  # Miso stays
    page.get_by_role("button", name=said["forget"]).click()
    expect(page).to_have_url(f"{base}/memories")
    expect(page.get_by_test_id("toast")).to_contain_text(said["toast"])
    expect(row(page, CAT)).to_be_visible()
    expect(row(page, SECOND_CAT)).to_have_count(0)
    checks("back on the list, with the toast")


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "no-javascript"])
@pytest.mark.parametrize("language", ["en", "fr"])
def test_forget_everything_about_a_subject_with_and_without_javascript(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person, french_person: Person,
    javascript: bool, language: str,
) -> None:
    who = person if language == "en" else french_person
    page = new_context(java_script_enabled=javascript).new_page()  # the account says the language
    forget_about_cats(page, live_server.url, who, language, lambda state: None)
    texts = {m.text for m in live_server.runtime.service.list(who.place, state="all", limit=100).items}
    assert CAT in texts and SECOND_CAT not in texts and len(texts) == len(who.memory_ids) - 1


@pytest.mark.parametrize("language", ["en", "fr"])
def test_on_a_phone_every_page_of_it_fits_and_axe_finds_nothing(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person, french_person: Person,
    language: str,
) -> None:
    who = person if language == "en" else french_person
    page = new_context(viewport=PHONE, bypass_csp=True).new_page()
    found: list[str] = []

    def checks(state: str) -> None:
        page.wait_for_load_state("load")
        found.extend(measured(page, f"{language}, {state}"))
        found.extend(violations(page, f"{language}, {state}"))
        if state == "the preview":
            screenshot(page, f"forget-about-preview-phone-{language}.png")

    forget_about_cats(page, live_server.url, who, language, checks)
    assert found == []


def test_a_search_leads_to_it_with_the_subject_and_a_desktop_preview_is_axe_clean(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person
) -> None:
    page = new_context(bypass_csp=True).new_page()
    sign_in(page, live_server.url, person)
    page.get_by_label("Search my memories").fill("cat")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_test_id("memory")).to_have_count(2)
    page.get_by_test_id("forget-about").click()
    expect(page.get_by_label("Subject to forget")).to_have_value("cat")
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("forget-item")).to_have_count(2)
    assert violations(page, "the preview, desktop") == []
    screenshot(page, "forget-about-preview.png")
    page.get_by_label("Subject to forget").fill("zeppelins")
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("forget-none")).to_be_visible()
    assert violations(page, "nothing matches") == []
