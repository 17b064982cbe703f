"""What keeps a person safe in the browser: escaped text, no one else's memories, a CSP without
inline scripts, and CSRF tokens on every change."""

from __future__ import annotations

import re

from playwright.sync_api import ConsoleMessage, Dialog, Page, expect

from portal.domain.types import Saved

from .conftest import CAT, OTHER_TEXT, XSS_TEXT, LiveServer, Person, editing_row, open_editor, row


def test_markup_in_a_memory_is_shown_as_text_and_never_runs(
    signed_in: Page, live_server: LiveServer, person: Person
) -> None:
    page = signed_in
    dialogs: list[str] = []

    def record(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    saved = live_server.runtime.service.remember(person.place, XSS_TEXT, kind="fact")
    assert isinstance(saved, Saved)
    page.reload()
    shown = row(page, XSS_TEXT)
    expect(shown.get_by_text(XSS_TEXT, exact=True)).to_be_visible()
    expect(page.get_by_role("img")).to_have_count(0)

    # Through the in-place editor (a textarea) and back, and on the history page: still text.
    open_editor(page, XSS_TEXT)
    expect(editing_row(page).get_by_label("Memory")).to_have_value(XSS_TEXT)
    editing_row(page).get_by_role("button", name="Save").click()
    expect(row(page, XSS_TEXT).get_by_text(XSS_TEXT, exact=True)).to_be_visible()
    row(page, XSS_TEXT).get_by_role("link", name="Details").click()
    expect(page.get_by_test_id("revision").first.get_by_text(XSS_TEXT, exact=True)).to_be_visible()
    expect(page.get_by_role("img")).to_have_count(0)
    page.wait_for_timeout(200)  # an onerror handler would have fired by now
    assert dialogs == []


def test_another_persons_memory_is_not_found(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    other = person.other_memory_id
    for path in (f"/memories/{other}/edit", f"/memories/{other}/history"):
        response = page.goto(live_server.url + path)
        assert response is not None and response.status == 404, path
        expect(page.get_by_role("heading", name="Not found")).to_be_visible()
        expect(page.get_by_text(OTHER_TEXT)).to_have_count(0)
    # And the list never shows it.
    page.goto(live_server.url + "/memories")
    expect(page.get_by_text(OTHER_TEXT)).to_have_count(0)


def test_the_content_security_policy_forbids_inline_scripts(
    signed_in: Page, live_server: LiveServer, person: Person
) -> None:
    page = signed_in
    violations: list[str] = []

    def watch(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            violations.append(message.text)

    page.on("console", watch)
    for path in ("/memories", "/login"):
        response = page.goto(live_server.url + path)
        assert response is not None
        policy = response.headers.get("content-security-policy", "")
        directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}
        assert directives.get("script-src") == ["'self'"], policy
        assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy, policy
    # The portal's own pages and htmx swaps break no rule of it (a violation is logged to the console).
    page.goto(live_server.url + "/memories")
    open_editor(page, CAT).fill("Has a cat called Miso, a ginger one")
    editing_row(page).get_by_role("button", name="Save").click()
    expect(row(page, "a ginger one")).to_be_visible()
    assert violations == []


def test_a_post_without_the_csrf_token_is_refused(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    memory_id = person.memory_ids[CAT]
    # The page's own cookies ride along (page.request shares them): only the token is missing.
    answers = {
        "pause": page.request.post(live_server.url + "/account/pause", form={}),
        "forget": page.request.post(f"{live_server.url}/memories/{memory_id}/forget", form={}),
        "edit": page.request.post(f"{live_server.url}/memories/{memory_id}", form={"text": "Changed by a forged form"}),
        "erase": page.request.post(f"{live_server.url}/account/erase", form={"confirm": person.email}),
    }
    assert {name: a.status for name, a in answers.items()} == dict.fromkeys(answers, 400)
    assert re.search("CSRF", answers["pause"].text(), re.IGNORECASE)
    service = live_server.runtime.service
    assert not service.is_paused(person.place)
    assert service.get(person.place, memory_id).text == CAT
    assert len(service.export(person.place)["memories"]) == len(person.memory_ids)
    # The same session with its token does get through (so the 400 was the token, not the session).
    page.reload()
    page.get_by_role("button", name="Pause memory").click()
    expect(page.get_by_role("button", name="Resume memory")).to_be_visible()
