"""The portal as a new person meets it (issue 27, items 5, 6, 7 and 10), in Chromium:

- paused, the Add form says so before anything is typed and cannot be used, with and without
  JavaScript, and offers to resume right there;
- after filtering the list by kind, going elsewhere and pressing Back, the select says the kind the
  list shows;
- an import's preview shows each line's kind (guessed from its words), lets the person change it
  and leave lines out, and the list then reads as the file did;
- a memory's history is numbered by revision, and a revision no longer kept is said in words.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from ..screenshots import screenshot
from .conftest import CAT, LiveServer, Person, row, sign_in

GOALS = 2  # the demo's goal and the goal learnt in the background


# ---------------------------------------------------------------------------------- item 5: paused


def test_paused_the_add_form_says_so_first_and_cannot_be_used(signed_in: Page, live_server: LiveServer,
                                                              person: Person) -> None:
    page = signed_in
    page.get_by_label("New memory").fill("Half a thought")
    page.get_by_role("button", name="Pause memory").click()
    expect(page.get_by_role("button", name="Resume memory")).to_be_focused()
    # At once, without a reload: said first, the controls disabled, what was typed still there.
    expect(page.get_by_test_id("add-paused")).to_have_text(
        "Memory is paused, so nothing new can be added until you resume it. Resume to add memories")
    expect(page.get_by_label("New memory")).to_be_disabled()
    expect(page.get_by_label("New memory")).to_have_value("Half a thought")
    expect(page.get_by_role("button", name="Add", exact=True)).to_be_disabled()
    expect(page.locator("#new-kind")).to_be_disabled()
    screenshot(page, "paused-add-form.png")
    page.reload()
    expect(page.get_by_label("New memory")).to_be_disabled()

    # The way out is right there, and the cursor lands where the person was going to type.
    page.get_by_role("button", name="Resume to add memories").click()
    expect(page.get_by_label("New memory")).to_be_enabled()
    expect(page.get_by_label("New memory")).to_be_focused()
    expect(page.get_by_role("button", name="Pause memory")).to_be_visible()
    expect(page.get_by_test_id("add-paused")).to_have_count(0)
    assert not live_server.runtime.service.is_paused(person.place)
    page.get_by_label("New memory").fill("Plays chess on Sundays")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(row(page, "Plays chess on Sundays")).to_be_visible()


def test_paused_without_javascript_the_form_is_disabled_too(new_context: Callable[..., BrowserContext],
                                                            live_server: LiveServer, person: Person) -> None:
    page = new_context(java_script_enabled=False).new_page()
    sign_in(page, live_server.url, person)
    page.get_by_role("button", name="Pause memory").click()
    expect(page).to_have_url(f"{live_server.url}/memories")
    expect(page.get_by_test_id("add-paused")).to_contain_text("Memory is paused, so nothing new can be added")
    expect(page.get_by_label("New memory")).to_be_disabled()
    expect(page.get_by_role("button", name="Add", exact=True)).to_be_disabled()
    page.get_by_role("button", name="Resume to add memories").click()
    expect(page).to_have_url(f"{live_server.url}/memories#add-form")
    expect(page.get_by_label("New memory")).to_be_enabled()
    assert not live_server.runtime.service.is_paused(person.place)


# ------------------------------------------------------------------ item 6: the filter after Back


def filtered_to(page: Page, kind: str, count: int) -> None:
    """The select, the address and the list agree: `count` memories, each of `kind` (if one)."""
    expect(page.locator("#filter-kind")).to_have_value(kind)
    expect(page.get_by_test_id("memory")).to_have_count(count)
    if kind:  # two goals and two preferences: the count alone cannot tell the lists apart
        expect(page.locator("#memory-list .badge.kind")).to_have_text([kind.capitalize()] * count)


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "no-javascript"])
def test_back_to_a_filtered_list_shows_its_filter(new_context: Callable[..., BrowserContext], live_server: LiveServer,
                                                  person: Person, javascript: bool) -> None:
    page = new_context(java_script_enabled=javascript).new_page()
    sign_in(page, live_server.url, person)
    page.locator("#filter-kind").select_option("goal")
    if not javascript:
        page.get_by_role("button", name="Search").click()
    expect(page).to_have_url(f"{live_server.url}/memories?q=&kind=goal")  # the form's fields, with or without htmx
    filtered_to(page, "goal", GOALS)
    # Elsewhere (a page of its own) and Back.
    page.get_by_role("link", name="Import memories").click()
    expect(page.get_by_role("heading", name="Import memories")).to_be_visible()
    page.go_back()
    filtered_to(page, "goal", GOALS)
    if javascript:
        # Another kind, then Back: htmx brings the goals back from its history, and the select with them.
        page.locator("#filter-kind").select_option("preference")
        expect(page).to_have_url(f"{live_server.url}/memories?q=&kind=preference")
        filtered_to(page, "preference", 2)
        page.go_back()
        expect(page).to_have_url(f"{live_server.url}/memories?q=&kind=goal")
        filtered_to(page, "goal", GOALS)
        page.go_back()
        expect(page).to_have_url(f"{live_server.url}/memories")
        filtered_to(page, "", len(person.memory_ids))
        page.go_forward()
        filtered_to(page, "goal", GOALS)


# --------------------------------------------------------------------------------- item 7: import

FILE = "Likes jazz on Sundays\nWants to run a marathon\nOwns a red bicycle\nlikes GREEN tea, not coffee\nFeels calm by the sea\n"


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "no-javascript"])
def test_the_import_preview_lets_the_person_choose_and_the_list_reads_as_the_file(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person, javascript: bool
) -> None:
    page = new_context(java_script_enabled=javascript).new_page()
    sign_in(page, live_server.url, person)
    page.goto(f"{live_server.url}/account/import")
    page.get_by_label("File").set_input_files({"name": "memories.txt", "mimeType": "text/plain", "buffer": FILE.encode()})
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("import-summary")).to_contain_text("4 memories will be added. 1 is kept already")
    lines = page.get_by_test_id("import-line")
    expect(lines).to_have_count(4)
    guessed = {"Likes jazz on Sundays": "preference", "Wants to run a marathon": "goal", "Owns a red bicycle": "fact",
               "Feels calm by the sea": "feeling"}
    for text, kind in guessed.items():
        line = lines.filter(has_text=text)
        expect(line.get_by_role("checkbox", name=text)).to_be_checked()
        expect(line.get_by_label("Kind")).to_have_value(kind)
    expect(page.get_by_test_id("import-held")).to_contain_text("likes GREEN tea, not coffee")
    screenshot(page, f"import-preview-{'js' if javascript else 'plain'}.png")

    lines.filter(has_text="Owns a red bicycle").get_by_label("Kind").select_option("event")
    lines.filter(has_text="Wants to run a marathon").get_by_role("checkbox").uncheck()
    page.get_by_role("button", name="Add the ticked memories").click()
    expect(page).to_have_url(f"{live_server.url}/memories")
    expect(page.get_by_test_id("toast")).to_contain_text("3 memories imported.")
    top = page.get_by_test_id("memory")
    expect(top.nth(0)).to_contain_text("Likes jazz on Sundays")
    expect(top.nth(0)).to_contain_text("Preference")
    expect(top.nth(1)).to_contain_text("Owns a red bicycle")
    expect(top.nth(1)).to_contain_text("Event")
    expect(top.nth(2)).to_contain_text("Feels calm by the sea")
    expect(top.nth(2)).to_contain_text("Feeling")
    expect(row(page, "Wants to run a marathon")).to_have_count(0)


# -------------------------------------------------------------------------------- item 10: history


def test_history_is_numbered_by_revision_and_says_what_is_missing(signed_in: Page, live_server: LiveServer,
                                                                 person: Person) -> None:
    service, memory_id = live_server.runtime.service, person.memory_ids[CAT]
    service.update(person.place, memory_id, text="Has a cat called Miso, a tabby")
    service.update(person.place, memory_id, text="Has two cats, Miso and Tofu")
    service.undo(person.place, memory_id)
    page = signed_in
    page.reload()
    row(page, "Has a cat called Miso, a tabby").get_by_role("link", name="Details").click()
    entries = page.get_by_test_id("revision")
    expect(entries).to_have_count(2)
    # The numbers the browser draws are the revisions the entries name.
    assert entries.evaluate_all("items => items.map(item => item.value)") == [4, 1]
    expect(entries.nth(0)).to_contain_text("Revision 4")
    expect(entries.nth(1)).to_contain_text("Revision 1")
    expect(entries.nth(0).get_by_test_id("revision-gap")).to_have_text(
        "An Undo took back revision 3: this is the wording of revision 2 again.")
    screenshot(page, "history-numbers.png")
