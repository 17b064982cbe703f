"""The portal on a phone and the feedback it gives (issue 17), in Chromium: five memories or more
to a 375x812 screen with every control at least 44 px tall, the kind filter applied on change, a
live counter under the text field, toasts that can be closed, and the Undo next to the row."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import BrowserContext, Page, expect

from ..screenshots import screenshot
from .conftest import CAT, LiveServer, Person, editing_row, open_editor, row, sign_in

PHONE = {"width": 375, "height": 812}

# Every control a finger may need on the memories page, with its box (visible ones only).
CONTROLS = """() => Array.from(document.querySelectorAll(
    'button, a.button, summary, input:not([type=hidden]), select, textarea'))
  .filter(el => el.offsetParent !== null && !el.closest('.visually-hidden'))
  .map(el => { const r = el.getBoundingClientRect();
               return {what: el.tagName + ' ' + (el.textContent || el.name || el.id).trim().slice(0, 30),
                       height: r.height, width: r.width}; })"""


def test_a_phone_shows_five_memories_and_every_target_is_44px(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person
) -> None:
    page = new_context(viewport=PHONE).new_page()
    sign_in(page, live_server.url, person)
    live_server.runtime.service.pin(person.place, person.memory_ids[CAT])
    page.reload()
    small = [c for c in page.evaluate(CONTROLS) if c["height"] < 44]
    assert small == []
    cards = page.locator("#memory-list > li")
    assert cards.count() >= 5
    cards.first.scroll_into_view_if_needed()
    page.evaluate("document.querySelector('#memory-list').scrollIntoView({block: 'start'})")
    visible = page.evaluate("""() => Array.from(document.querySelectorAll('#memory-list > li'))
        .filter(li => { const r = li.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }).length""")
    heights = page.evaluate(
        "() => Array.from(document.querySelectorAll('#memory-list > li')).map(li => li.getBoundingClientRect().height)")
    assert visible >= 5, f"{visible} whole memories on a 375x812 screen: {heights}"
    # a pinned row's buttons stay on one line
    pinned = row(page, CAT).locator(".actions")
    tops = pinned.evaluate("el => Array.from(el.querySelectorAll('button, a.button')).map(b => b.getBoundingClientRect().top)")
    assert len(set(round(t) for t in tops)) == 1
    screenshot(page, "memories-phone.png")


def test_the_kind_filter_applies_on_change(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    page.locator("#filter-kind").select_option("goal")  # no button pressed
    expect(page).to_have_url(f"{live_server.url}/memories?q=&kind=goal")
    assert page.locator("#memory-list > li").count() >= 1
    for kind in page.locator("#memory-list .badge.kind").all_inner_texts():
        assert kind == "Goal"


def test_the_text_field_counts_against_the_one_limit(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    limit = live_server.runtime.service.options.max_text_length
    counter = page.locator('[data-counter-for="new-text"]')
    expect(counter).to_have_text(f"0 of {limit} characters")
    page.get_by_label("New memory").fill("Plays chess")
    expect(counter).to_have_text(f"11 of {limit} characters")
    field = open_editor(page, CAT)
    assert field.get_attribute("maxlength") == str(limit)
    expect(editing_row(page).locator(".counter")).to_have_text(f"{len(CAT)} of {limit} characters")


def test_toasts_close_and_the_undo_is_the_next_stop(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    open_editor(page, CAT).fill("Has a cat called Miso, a tabby")
    editing_row(page).get_by_role("button", name="Save").click()
    toast = page.get_by_test_id("toast")
    expect(toast).to_contain_text("Saved.")
    changed = row(page, "a tabby")
    # keyboard focus is back on the row's Edit; Undo is a few Tabs away, in the row itself
    expect(changed.get_by_role("link", name="Edit")).to_be_focused()
    for _ in range(4):
        page.keyboard.press("Tab")
        if changed.get_by_role("button", name="Undo").evaluate("b => b === document.activeElement"):
            break
    expect(changed.get_by_role("button", name="Undo")).to_be_focused()
    page.keyboard.press("Enter")
    # The undo has answered (CAT alone also matches the edited row, so wait for the wording to go
    # and the undo's own toast: a Dismiss sent before it would close the save's toast instead).
    expect(row(page, "a tabby")).to_have_count(0)
    expect(row(page, CAT)).to_be_visible()
    expect(page.get_by_test_id("toast").last).to_contain_text("Undone.")
    # a toast closes with its button
    page.get_by_test_id("toast").last.get_by_role("button", name="Dismiss").click()
    expect(page.get_by_test_id("toast")).to_have_count(0)


def test_dates_stay_on_one_line_the_search_row_lines_up_and_the_cards_breathe(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, french_person: Person
) -> None:
    for viewport in ({"width": 1280, "height": 800}, PHONE):
        page = new_context(viewport=viewport).new_page()
        sign_in(page, live_server.url, french_person)
        # a date is never cut over two lines (French dates wrapped)
        for height in page.locator("#memory-list .meta time").evaluate_all(
                "els => els.map(e => e.getClientRects().length)"):
            assert height == 1
        # the search field, the select and the button are one height
        heights = page.locator("form.search").evaluate(
            "f => ['input[type=search]', 'select', 'button'].map(s => f.querySelector(s).getBoundingClientRect().height)")
        assert max(heights) - min(heights) < 1, heights
        # "Your data" does not touch the last memory
        gap = page.evaluate("""() => document.querySelector('#your-data').closest('section').getBoundingClientRect().top
            - document.querySelector('#results').getBoundingClientRect().bottom""")
        assert gap >= 12, gap
