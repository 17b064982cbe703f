"""A toast never sits on a control or on what the person needs to read (issue 27): while one shows,
on a desktop (1280x800) and a phone (375x812), no link, button, field, memory text, table cell or
count overlaps it. Toasts take their own room: a memory's in its row (or in the place of a row
that went), the others at the top of the page; none floats over the page."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, ViewportSize, expect

from portal.domain.types import Saved

from .conftest import CAT, PASSWORD, TEA, VIEWPORT, LiveServer, Person, editing_row, open_editor, row, sign_in

PHONE: ViewportSize = {"width": 375, "height": 812}

# What each visible toast overlaps: any control, memory text, cell or count outside the toast.
COVERED = """() => {
  // checkVisibility: what a closed <details> holds has boxes in Chromium but is not shown.
  const shown = el => el.checkVisibility({visibilityProperty: true});
  const toasts = Array.from(document.querySelectorAll('[data-testid=toast]')).filter(shown);
  const found = [];
  for (const toast of toasts) {
    const t = toast.getBoundingClientRect();
    for (const el of document.querySelectorAll(
        'a[href], button, summary, input:not([type=hidden]), select, textarea, .memory-text, td, th, dd, dt, h1, h2, p')) {
      if (toast.contains(el) || el.contains(toast) || !shown(el)) continue;
      const r = el.getBoundingClientRect();
      if (r.width && r.height && r.left < t.right && r.right > t.left && r.top < t.bottom && r.bottom > t.top)
        found.push(el.tagName.toLowerCase() + ' "' + (el.textContent || el.getAttribute('name') || '').trim().slice(0, 30) + '"');
    }
  }
  return {toasts: toasts.length, found};
}"""


def covered(page: Page) -> list[str]:
    expect(page.get_by_test_id("toast").first).to_be_visible()
    seen = page.evaluate(COVERED)
    assert seen["toasts"] >= 1
    return list(seen["found"])


@pytest.fixture(params=["desktop", "phone"])
def viewport(request: pytest.FixtureRequest) -> ViewportSize:
    return VIEWPORT if request.param == "desktop" else PHONE


def test_a_memorys_toast_covers_no_row(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person, viewport: ViewportSize
) -> None:
    page = new_context(viewport=viewport).new_page()
    sign_in(page, live_server.url, person)
    found: dict[str, list[str]] = {}
    # A row in the middle of the screen saved: the rows under it keep History and Forget in view.
    row(page, TEA).evaluate("li => li.scrollIntoView({block: 'center'})")
    open_editor(page, TEA).fill("Likes green tea, and oolong")
    editing_row(page).get_by_role("button", name="Save").click()
    expect(row(page, "oolong")).to_be_visible()
    found["saved"] = covered(page)
    row(page, CAT).get_by_role("button", name="Pin").click()
    expect(row(page, CAT).get_by_role("button", name="Unpin")).to_be_visible()
    found["pinned"] = covered(page)
    page.once("dialog", lambda dialog: dialog.accept())
    row(page, "oolong").get_by_role("button", name="Forget").click()
    expect(row(page, "oolong")).to_have_count(0)
    found["forgotten"] = covered(page)
    page.evaluate("window.scrollTo(0, 0)")
    page.get_by_label("New memory").fill("Plays the oboe")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(row(page, "Plays the oboe")).to_be_visible()
    found["added"] = covered(page)
    page.get_by_role("button", name="Pause memory").click()
    expect(page.get_by_role("button", name="Resume memory")).to_be_visible()
    found["paused"] = covered(page)
    assert {state: what for state, what in found.items() if what} == {}


def test_the_toast_after_erasing_everything_covers_no_link(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person, viewport: ViewportSize
) -> None:
    page = new_context(viewport=viewport).new_page()
    sign_in(page, live_server.url, person)
    page.goto(f"{live_server.url}/account/erase")
    page.get_by_label("Type your e-mail address to confirm").fill(person.email)
    page.get_by_role("button", name="Erase everything").click()
    page.wait_for_url(f"{live_server.url}/memories", wait_until="load")
    expect(page.get_by_test_id("toast")).to_contain_text("Everything was erased")
    assert covered(page) == []


def test_the_toast_after_an_erasure_covers_no_count(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person, viewport: ViewportSize
) -> None:
    runtime = live_server.runtime
    staff = runtime.accounts.create(f"desk-{person.email}", "Sam Support", person.place.scope, "staff", PASSWORD)
    leaving = runtime.accounts.create(f"leaving-{person.email}", "Lea", person.place.scope, "member", PASSWORD)
    assert isinstance(runtime.service.remember(leaving.place, "Keeps bees"), Saved)
    page = new_context(viewport=viewport).new_page()
    page.goto(f"{live_server.url}/login")
    page.get_by_label("Email").fill(staff.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/login" not in url)
    page.goto(f"{live_server.url}/staff/people/{leaving.id}")
    page.locator("#erasure-ticket").fill("ZD-4711")
    page.locator("form[action$='/erasure'] button[type=submit]").click()
    page.locator("#confirm").fill(leaving.email)
    page.locator("main form button[type=submit]").click()
    expect(page.get_by_test_id("toast")).to_be_visible()
    counts = page.locator("[data-testid^=count-]")
    expect(counts.first).to_be_visible()
    counts.last.scroll_into_view_if_needed()
    assert covered(page) == []

