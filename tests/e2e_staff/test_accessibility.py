"""Every console page state, checked with axe-core in Chromium (issue 17): none may have a
violation. Staff: find a person, the person, the break-glass memories, an erasure request, the
erasure list and the audit log; an admin: the console and the page that shows a new key once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from ..axe import violations
from .conftest import PASSWORD, VIEWPORT, Desk, LiveServer, sign_in
from .test_console import find_and_open, section


@pytest.fixture
def checked_page(browser: Browser) -> Iterator[Page]:
    """A page whose context bypasses the CSP, so that axe can be injected."""
    context = browser.new_context(viewport=VIEWPORT, locale="en-GB", bypass_csp=True)
    context.set_default_timeout(5000)
    try:
        yield context.new_page()
    finally:
        context.close()


def test_no_console_state_has_an_accessibility_violation(checked_page: Page, live_server: LiveServer, desk: Desk) -> None:
    page, found = checked_page, []
    sign_in(page, live_server.url, desk.staff)
    found += violations(page, "find a person")
    find_and_open(page, desk)
    found += violations(page, "a person")
    opened = section(page, "See the memories")
    opened.get_by_label("Reason").select_option(index=1)
    opened.get_by_label("Ticket reference").fill("T-1")
    opened.get_by_role("button", name="Open memories").click()
    found += violations(page, "break-glass memories")
    page.goto(f"{live_server.url}/staff/people/{desk.person.id}")
    erasure = section(page, "Erasure request")
    erasure.get_by_label("Ticket reference").fill("ZD-1")
    erasure.get_by_role("button", name="Log the request").click()
    expect(page.get_by_test_id("state")).to_have_text("Open")
    found += violations(page, "an erasure request")
    page.goto(f"{live_server.url}/staff/erasure")
    found += violations(page, "erasure requests")
    page.goto(f"{live_server.url}/staff/audit")
    found += violations(page, "audit log")

    admin = live_server.runtime.accounts.create("root@e2e.example", "Ada Admin", desk.staff.tenant_id, "admin", PASSWORD)
    page.context.clear_cookies()
    sign_in(page, live_server.url, admin)
    page.goto(f"{live_server.url}/admin/")
    found += violations(page, "admin console")
    page.locator("#key-tenant").select_option(index=1)
    page.get_by_role("button", name="Create API key").click()
    expect(page.get_by_test_id("new-key")).to_be_visible()
    found += violations(page, "a new key, shown once")
    assert found == []
