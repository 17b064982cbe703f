"""Every page state a person meets, checked with axe-core in Chromium (issue 17): none may have a
violation. The states: signed out, the list (with the New banner), a search that finds nothing,
editing in place, a toast, paused, the history, erase everything, a confirmation page, not found,
importing (the form, the preview, the toast with its Undo, which is used), connected apps (none,
one, one blocked, and a memory's history naming the app), the assistant's picture of the person
(also with the AI off, in French and on a phone), the AI switched off, French, and a phone."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import BrowserContext, expect

from portal.domain.apps import app_of

from ..axe import violations
from .conftest import CAT, TEA, LiveServer, Person, editing_row, open_editor, row, sign_in


def test_no_page_state_of_a_person_has_an_accessibility_violation(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person, person_ai_off: Person,
    french_person: Person,
) -> None:
    found: list[str] = []
    page = new_context(bypass_csp=True).new_page()
    page.goto(f"{live_server.url}/login")
    found += violations(page, "sign in")
    sign_in(page, live_server.url, person)
    found += violations(page, "memories, with the New banner")
    page.goto(f"{live_server.url}/memories?q=zzzqqq")
    expect(page.get_by_text("Nothing matches.")).to_be_visible()
    found += violations(page, "a search that finds nothing")
    page.goto(f"{live_server.url}/memories")
    open_editor(page, CAT)
    found += violations(page, "editing in place")
    editing_row(page).get_by_role("button", name="Save").click()
    expect(page.get_by_test_id("toast")).to_be_visible()
    found += violations(page, "a toast with Undo")
    page.get_by_role("button", name="Pause memory").click()
    expect(page.get_by_role("button", name="Resume memory")).to_be_visible()
    found += violations(page, "paused")
    page.get_by_role("button", name="Resume memory").click()
    row(page, CAT).get_by_role("link", name="Details").click()
    found += violations(page, "history")
    page.goto(f"{live_server.url}/account/erase")
    found += violations(page, "erase everything")
    # a plain form post (no htmx): the confirmation page
    page.goto(f"{live_server.url}/memories")
    row(page, CAT).locator("form:has(button.danger)").evaluate("form => form.submit()")
    expect(page.get_by_test_id("confirm")).to_be_visible()
    found += violations(page, "confirm forgetting")
    page.goto(f"{live_server.url}/memories/nope/history")
    found += violations(page, "not found")
    page.goto(f"{live_server.url}/account/import")
    found += violations(page, "import")
    page.get_by_label("File").set_input_files(
        {"name": "memories.txt", "mimeType": "text/plain", "buffer": f"- Keeps bees\n- {CAT}\n".encode()})
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("import-summary")).to_contain_text("1 memory will be added.")
    found += violations(page, "import preview")
    page.get_by_role("button", name="Add the ticked memories").click()
    expect(page.get_by_test_id("toast")).to_contain_text("1 memory imported.")
    found += violations(page, "imported, with Undo")
    page.get_by_test_id("toast").get_by_role("button", name="Undo").click()
    expect(page.get_by_test_id("toast")).to_contain_text("1 imported memory taken back.")
    expect(page.get_by_text("Keeps bees")).to_have_count(0)
    page.goto(f"{live_server.url}/account/apps")
    found += violations(page, "connected apps, none yet")
    key, _token = live_server.runtime.api_keys.create(person.place.scope, ("memories:read",), name="Support bot")
    bot = live_server.runtime.service.for_app(app_of(key))
    bot.recall(person.place, "green tea")
    page.reload()
    found += violations(page, "connected apps")
    page.locator(f"#app-{app_of(key).id}").get_by_role("button", name="Block").click()
    expect(page.get_by_test_id("app-state")).to_have_text("blocked")
    found += violations(page, "an app blocked")
    page.goto(f"{live_server.url}/memories")
    row(page, TEA).get_by_role("link", name="Details").click()
    expect(page.get_by_test_id("use")).to_have_count(1)
    found += violations(page, "history, used by an app")
    page.goto(f"{live_server.url}/memories/conversations")
    found += violations(page, "recent conversations, none yet")  # the recall above named no conversation
    page.goto(f"{live_server.url}/memories")
    page.get_by_role("link", name="The assistant's picture of you").click()
    expect(page.get_by_test_id("in-portrait").first).to_be_visible()
    page.locator("details summary").click()  # the text as the assistant reads it, opened
    expect(page.get_by_test_id("portrait-text")).to_be_visible()
    found += violations(page, "the assistant's picture of you")

    for who, state in ((person_ai_off, "AI switched off"), (french_person, "in French")):
        other = new_context(bypass_csp=True).new_page()
        sign_in(other, live_server.url, who)
        found += violations(other, state)
        other.goto(f"{live_server.url}/portrait")
        found += violations(other, f"the assistant's picture of you, {state}")
    phone = new_context(bypass_csp=True, viewport={"width": 375, "height": 812}).new_page()
    sign_in(phone, live_server.url, person)
    found += violations(phone, "on a phone")
    phone.goto(f"{live_server.url}/portrait")
    found += violations(phone, "the assistant's picture of you, on a phone")
    assert found == []
