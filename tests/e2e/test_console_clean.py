"""Pausing and resuming memory, as a person does it in Chromium, leaves the browser's console
clean (issue 38, item 15): every Resume logged `hx-include "#kept-text" returned no matches`, the
text kept from the add form being there only when something was typed before the pause."""

from __future__ import annotations

from playwright.sync_api import ConsoleMessage, Page, expect

from .conftest import LiveServer, Person


def test_pause_and_resume_log_nothing_in_the_console(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    logged: list[str] = []

    def keep(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            logged.append(f"{message.type}: {message.text}")

    page.on("console", keep)
    page.on("pageerror", lambda error: logged.append(f"page error: {error}"))
    panel = page.locator("#pause-panel")
    for typed in ("", "Plays the oboe"):  # nothing typed, then a memory typed before the pause
        page.get_by_label("New memory").fill(typed)
        panel.get_by_role("button", name="Pause memory").click()
        expect(panel.get_by_role("button", name="Resume memory")).to_be_visible()
        panel.get_by_role("button", name="Resume memory").click()
        expect(panel.get_by_role("button", name="Pause memory")).to_be_visible()
        expect(page.get_by_label("New memory")).to_have_value(typed)  # what was typed is still there
    # and from the add form's own Resume
    panel.get_by_role("button", name="Pause memory").click()
    page.get_by_test_id("add-paused").get_by_role("button", name="Resume to add memories").click()
    expect(panel.get_by_role("button", name="Pause memory")).to_be_visible()
    assert logged == []
