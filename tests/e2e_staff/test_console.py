"""The support console in a real browser: a staff member finds a person, exports their data for an
access request, logs and carries out an erasure request, and reads the audit log — which names
ids and actions, never the person's words."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import Browser, Locator, Page, expect

from ..screenshots import screenshot
from .conftest import MEMORIES, PASSWORD, VIEWPORT, WORDS, Desk, LiveServer, sign_in


def find_and_open(page: Page, desk: Desk) -> None:
    page.get_by_label("Find a person").fill(desk.person.email)
    page.get_by_role("button", name="Search").click()
    results = page.get_by_test_id("person")
    expect(results).to_have_count(1)
    results.get_by_role("link", name=desk.person.email).click()
    expect(page.get_by_role("heading", name=re.compile("Greta Lind"))).to_be_visible()


def section(page: Page, heading: str) -> Locator:
    """The card titled `heading` (the person page has three forms with a "Ticket reference")."""
    return page.locator("section").filter(has=page.get_by_role("heading", name=heading, exact=True))


def test_find_erase_and_audit(page: Page, live_server: LiveServer, desk: Desk) -> None:
    sign_in(page, live_server.url, desk.staff)
    find_and_open(page, desk)
    expect(page.get_by_test_id("total")).to_have_text("3")
    by_kind = page.get_by_role("table", name="Memories by kind")
    for kind in ("Fact", "Goal", "Preference"):
        expect(by_kind.get_by_role("row", name=f"{kind} 1")).to_be_visible()
    for word in WORDS:
        expect(page.get_by_text(word)).to_have_count(0)  # counts, not the person's words
    screenshot(page, "staff-person.png")

    erasure = section(page, "Erasure request")
    erasure.get_by_label("Ticket reference").fill("ZD-4711")
    erasure.get_by_role("button", name="Log the request").click()
    expect(page.get_by_test_id("state")).to_have_text("Open")
    expect(page.get_by_test_id("person-name")).to_have_text("Greta Lind")
    expect(page.get_by_text("Erasure request logged.")).to_be_visible()
    confirm = page.get_by_label("Type the person's e-mail or owner id to confirm")
    confirm.fill("someone.else@e2e.example")
    page.get_by_role("button", name="Erase all data").click()
    expect(page.get_by_role("alert")).to_contain_text("nothing was erased")
    assert live_server.runtime.accounts.get(desk.person.id) is not None
    page.get_by_label("Type the person's e-mail or owner id to confirm").fill(desk.person.email)
    page.get_by_role("button", name="Erase all data").click()

    expect(page.get_by_test_id("state")).to_have_text("Done")
    done = "Erased: everything kept about this person in their organisation, and their account."
    expect(page.get_by_text(done)).to_be_visible()
    expect(page.get_by_test_id("count-memories")).to_have_text("3")
    expect(page.get_by_test_id("count-accounts")).to_have_text("1")
    expect(page.get_by_text(re.compile(r"[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d\d:\d\d\s[AP]M UTC"))).to_be_visible()
    expect(page.get_by_role("button", name="Erase all data")).to_have_count(0)
    screenshot(page, "staff-erasure-done.png")
    assert live_server.runtime.accounts.get(desk.person.id) is None
    assert live_server.runtime.service.list(desk.person.place, state="all").items == []

    page.get_by_role("link", name="Audit log").click()
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
    expect(page.get_by_test_id("audit-entry")).to_have_count(2)  # this tenant's entries only
    page.get_by_label("Subject (e-mail, name or owner id)").fill(desk.person.owner_id)
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(f"subject={desk.person.owner_id}"))
    mine = page.get_by_test_id("audit-entry")
    expect(mine).to_have_count(2)
    for action in ("Logged an erasure request", "Carried out an erasure"):  # each action in words
        expect(mine.filter(has_text=action)).to_have_count(1)
    expect(mine.filter(has_text="Carried out an erasure")).to_contain_text("Memories: 3")
    expect(mine.first).to_contain_text("ZD-4711")
    main = page.get_by_role("main").inner_text()
    for word in (*WORDS, desk.person.email, desk.person.name):
        assert word not in main, word
    screenshot(page, "staff-audit.png")


def test_export_data_downloads_everything_kept(page: Page, live_server: LiveServer, desk: Desk, tmp_path: Path) -> None:
    sign_in(page, live_server.url, desk.staff)
    find_and_open(page, desk)
    access = section(page, "Access request")
    access.get_by_label("Ticket reference").fill("REQ-15")
    with page.expect_download() as download_info:
        access.get_by_role("button", name="Export data").click()
    download = download_info.value
    assert download.suggested_filename == f"access-{desk.person.id}.json"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    data = json.loads(saved.read_text(encoding="utf-8"))
    assert sorted(m["text"] for m in data["memories"]) == sorted(text for text, _kind in MEMORIES)
    assert data["account"]["email"] == desk.person.email
    page.get_by_role("link", name="Audit log").click()
    exported = page.get_by_test_id("audit-entry").filter(has_text="Exported for an access request")
    expect(exported).to_have_count(1)
    expect(exported).to_contain_text("REQ-15")
    exported.get_by_role("link", name=desk.person.owner_id[:8]).click()  # a subject's id filters the log by it
    expect(page.get_by_label("Subject (e-mail, name or owner id)")).to_have_value(desk.person.owner_id)
    expect(page.get_by_test_id("audit-entry")).to_have_count(1)


def test_an_admin_lands_on_the_administration_and_copies_a_new_key(browser: Browser, live_server: LiveServer,
                                                                    desk: Desk) -> None:
    """Issue 27: the admin lands on /admin/; the key shown once has a Copy button that puts it on
    the clipboard (with the CSP: no inline script), and the address bar is the page's own GET."""
    admin = live_server.runtime.accounts.create(f"root-{desk.staff.id[:6]}@e2e.example", "Ada Admin",
                                                desk.staff.tenant_id, "admin", PASSWORD)
    context = browser.new_context(viewport=VIEWPORT, locale="en-GB", permissions=["clipboard-read", "clipboard-write"])
    context.set_default_timeout(5000)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        sign_in(page, live_server.url, admin)
        expect(page).to_have_url(f"{live_server.url}/admin/")
        page.locator("#key-tenant").select_option(index=1)
        page.get_by_label("App name").fill("Copy test")
        page.get_by_role("button", name="Create API key").click()
        expect(page).to_have_url(f"{live_server.url}/admin/keys/new")  # not the POST's address
        key = page.get_by_test_id("new-key").inner_text().strip()
        assert live_server.runtime.api_keys.verify(key) is not None
        page.get_by_role("button", name="Copy the key").click()
        expect(page.get_by_test_id("copy-status")).to_have_text("Copied.")
        assert page.evaluate("navigator.clipboard.readText()") == key
        screenshot(page, "admin-new-key.png")
        assert errors == []  # no script refused by the Content-Security-Policy
    finally:
        context.close()
