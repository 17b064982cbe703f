"""Correcting a memory: in place with htmx, refused with the reason, undone from the toast, by
keyboard alone, and with JavaScript switched off."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import BrowserContext, Page, expect

from ..screenshots import screenshot
from .conftest import CAT, OTHER_NAME, TEA, LiveServer, Person, editing_row, open_editor, row, sign_in


def mark_page(page: Page) -> None:
    """A flag on this very document: it disappears if the browser loads another page."""
    page.evaluate("window.__stillThisPage = true")


def same_page(page: Page) -> bool:
    return bool(page.evaluate("window.__stillThisPage === true"))


def test_edit_in_place_swaps_the_row_for_a_form_and_back(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    url = page.url
    mark_page(page)
    row(page, CAT).get_by_role("link", name="Edit").click()
    form = editing_row(page)
    expect(form.get_by_label("Memory")).to_have_value(CAT)
    expect(form.get_by_label("Memory")).to_be_focused()
    expect(page.get_by_test_id("memory")).to_have_count(len(person.memory_ids))
    screenshot(page, "edit-in-place.png")

    form.get_by_label("Memory").fill("Has two cats, Miso and Tofu")
    form.get_by_role("button", name="Save").click()
    expect(row(page, "Has two cats, Miso and Tofu")).to_be_visible()
    expect(page.get_by_role("textbox", name="Memory", exact=True)).to_have_count(0)
    expect(page.get_by_test_id("toast")).to_contain_text("Saved.")
    assert page.url == url and same_page(page), "the edit loaded a page instead of swapping the row"
    stored = live_server.runtime.service.get(person.place, person.memory_ids[CAT])
    assert stored.text == "Has two cats, Miso and Tofu"

    # Cancel puts the row back unchanged, again without a page load.
    open_editor(page, TEA).fill("Likes coffee now")
    editing_row(page).get_by_role("link", name="Cancel").click()
    expect(row(page, TEA)).to_be_visible()
    expect(page.get_by_text("Likes coffee now")).to_have_count(0)
    assert same_page(page)

    page.reload()
    expect(row(page, "Has two cats, Miso and Tofu")).to_be_visible()
    expect(page.get_by_text(CAT, exact=True)).to_have_count(0)


def test_an_edit_naming_someone_else_is_refused_inline(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    mark_page(page)
    open_editor(page, CAT).fill(f"Has a cat called Miso, looked after by {OTHER_NAME}")
    editing_row(page).get_by_role("button", name="Save").click()
    expect(editing_row(page).get_by_role("alert")).to_have_text(
        "This is about someone else. Only what concerns you can be kept."
    )
    # The form stays open with what was typed, so nothing is lost.
    expect(editing_row(page).get_by_label("Memory")).to_have_value(f"Has a cat called Miso, looked after by {OTHER_NAME}")
    expect(editing_row(page).get_by_label("Memory")).to_have_attribute("aria-invalid", "true")
    assert same_page(page)
    screenshot(page, "refused-edit.png")

    page.reload()
    expect(row(page, CAT)).to_be_visible()
    expect(page.get_by_text("looked after by")).to_have_count(0)
    assert live_server.runtime.service.get(person.place, person.memory_ids[CAT]).text == CAT


def test_the_refusal_speaks_french_to_a_french_account(
    page: Page, live_server: LiveServer, french_person: Person
) -> None:
    sign_in(page, live_server.url, french_person)
    # Labels follow the account's language (translations are not this test's business): find the
    # row's first link (Edit) and the open form's only button (Save) by role alone.
    row(page, CAT).get_by_role("link").first.click()
    form = editing_row(page)
    expect(form.get_by_role("textbox")).to_be_focused()
    form.get_by_role("textbox").fill(f"Miso est gardé par {OTHER_NAME}")
    form.get_by_role("button").click()
    expect(editing_row(page).get_by_role("alert")).to_have_text(
        "Cela concerne quelqu'un d'autre. Seul ce qui vous concerne peut être gardé."
    )
    page.reload()
    expect(row(page, CAT)).to_be_visible()
    assert live_server.runtime.service.get(french_person.place, french_person.memory_ids[CAT]).text == CAT


def test_undo_from_the_toast_brings_the_text_back(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    open_editor(page, TEA).fill("Likes oolong tea")
    editing_row(page).get_by_role("button", name="Save").click()
    expect(row(page, "Likes oolong tea")).to_be_visible()

    page.get_by_test_id("toast").get_by_role("button", name="Undo").click()
    expect(row(page, TEA)).to_be_visible()
    expect(page.get_by_test_id("toast")).to_contain_text("Undone.")
    expect(page.get_by_text("Likes oolong tea")).to_have_count(0)
    page.reload()
    expect(row(page, TEA)).to_be_visible()
    expect(page.get_by_text("Likes oolong tea")).to_have_count(0)


def active_element(page: Page) -> dict[str, str]:
    """What has keyboard focus: its tag, its text, and the memory row it sits in."""
    found: dict[str, str] = page.evaluate(
        """() => {
            const el = document.activeElement;
            const li = el && el.closest('[data-testid="memory"]');
            return {tag: el ? el.tagName.toLowerCase() : '', text: el ? (el.textContent || '').trim() : '',
                    row: li ? li.textContent : ''};
        }"""
    )
    return found


def tab_to(page: Page, tag: str, text: str, row_text: str, limit: int = 80) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        now = active_element(page)
        if now["tag"] == tag and now["text"] == text and row_text in now["row"]:
            return
    raise AssertionError(f"Tab never reached {tag} {text!r} in the row {row_text!r}")


def test_keyboard_alone_edits_a_memory_and_focus_returns_to_its_edit_button(
    signed_in: Page, live_server: LiveServer, person: Person
) -> None:
    page = signed_in
    tab_to(page, "a", "Edit", CAT)
    page.keyboard.press("Enter")
    expect(editing_row(page).get_by_label("Memory")).to_be_focused()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("Has a cat called Miso, who is twelve")
    tab_to(page, "button", "Save", "")
    page.keyboard.press("Enter")
    expect(row(page, "Has a cat called Miso, who is twelve")).to_be_visible()
    expect(row(page, "Has a cat called Miso, who is twelve").get_by_role("link", name="Edit")).to_be_focused()
    now = active_element(page)
    assert (now["tag"], now["text"]) == ("a", "Edit") and "who is twelve" in now["row"], now

    # Escape leaves an edit without saving, focus back on the row's Edit again.
    page.keyboard.press("Enter")
    expect(editing_row(page).get_by_label("Memory")).to_be_focused()
    page.keyboard.type(" and sleeps all day")
    page.keyboard.press("Escape")
    expect(row(page, "Has a cat called Miso, who is twelve").get_by_role("link", name="Edit")).to_be_focused()
    expect(page.get_by_text("sleeps all day")).to_have_count(0)


def test_without_javascript_edit_is_a_page_and_save_comes_back_to_the_list(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person
) -> None:
    page = new_context(java_script_enabled=False).new_page()
    sign_in(page, live_server.url, person)
    expect(page).to_have_url(f"{live_server.url}/memories")
    memory_id = person.memory_ids[CAT]
    row(page, CAT).get_by_role("link", name="Edit").click()
    expect(page).to_have_url(f"{live_server.url}/memories/{memory_id}/edit")
    expect(page.get_by_role("heading", name="Edit a memory")).to_be_visible()
    page.get_by_label("Memory").fill("Has a cat called Miso (plain form)")
    page.get_by_role("button", name="Save").click()
    expect(page).to_have_url(f"{live_server.url}/memories#m-{memory_id}")
    expect(row(page, "Has a cat called Miso (plain form)")).to_be_visible()
    expect(page.get_by_test_id("toast")).to_contain_text("Saved.")

    # The toast's Undo is a plain form too.
    page.get_by_test_id("toast").get_by_role("button", name="Undo").click()
    expect(row(page, CAT)).to_be_visible()
    expect(page.get_by_text("(plain form)")).to_have_count(0)

    # A refusal without JavaScript: the edit page again, with the reason.
    row(page, CAT).get_by_role("link", name="Edit").click()
    page.get_by_label("Memory").fill(f"{OTHER_NAME} feeds Miso")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("alert")).to_have_text("This is about someone else. Only what concerns you can be kept.")
    assert live_server.runtime.service.get(person.place, memory_id).text == CAT


def test_without_javascript_forget_asks_on_a_page_first(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person
) -> None:
    page = new_context(java_script_enabled=False).new_page()
    sign_in(page, live_server.url, person)
    memory_id = person.memory_ids[CAT]
    row(page, CAT).get_by_role("button", name="Forget").click()
    expect(page.get_by_role("heading", name="Forget this memory for good, with every earlier version?")).to_be_visible()
    expect(page.get_by_test_id("confirm")).to_contain_text(CAT)
    assert live_server.runtime.service.get(person.place, memory_id).text == CAT  # nothing forgotten yet
    page.get_by_role("link", name="Cancel").click()
    expect(row(page, CAT)).to_be_visible()
    row(page, CAT).get_by_role("button", name="Forget").click()
    page.get_by_role("button", name="Forget it").click()
    expect(page.get_by_test_id("toast")).to_contain_text("Forgotten, with every earlier version.")
    expect(page.get_by_text(CAT)).to_have_count(0)
