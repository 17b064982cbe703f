"""The audit log as staff read it (issue 27): on a desktop (1280x800) a time, an id and a ticket
each stay on one line (times wrapped over three lines, tickets broke at their hyphen); on a phone
(375x812) the log is a card per entry, no wider than the screen; and the "erasure" family lists
every erasure, the person's own "erase everything" (`person.erased_all`) included."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from portal.domain.audit import AuditNote
from portal.domain.types import Saved

from ..screenshots import screenshot
from .conftest import PASSWORD, Desk, LiveServer, sign_in

# How many lines each time, id and ticket of the log takes.
LINES = """() => Array.from(document.querySelectorAll(
    '[data-testid=audit-entry] time, [data-testid=audit-entry] code, [data-testid=audit-entry] td:last-child'))
  .filter(el => el.textContent.trim())
  .map(el => { const range = document.createRange(); range.selectNodeContents(el);
               const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
               return [el.textContent.trim(), tops.size]; })"""


def erasures(live_server: LiveServer, desk: Desk) -> None:
    """A request logged and completed by staff (ticket ZD-4711), and a person erasing everything."""
    runtime = live_server.runtime
    request = runtime.support.log_erasure(desk.staff, desk.person.id, "ZD-4711", None)
    runtime.support.complete_erasure(desk.staff, request.id, desk.person.email)
    erik = runtime.accounts.create(f"erik-{desk.staff.email}", "Erik", desk.staff.tenant_id, "member", PASSWORD)
    assert isinstance(runtime.service.remember(erik.place, "Sails on Sundays"), Saved)
    runtime.service.forget_all(erik.place, audit=AuditNote(erik.id, erik.role, "person.erased_all"))


def test_times_ids_and_tickets_stay_on_one_line_and_erasure_finds_every_erasure(
    page: Page, live_server: LiveServer, desk: Desk
) -> None:
    erasures(live_server, desk)
    sign_in(page, live_server.url, desk.staff)
    page.goto(f"{live_server.url}/staff/audit")
    expect(page.get_by_test_id("audit-entry").first).to_be_visible()
    lines = page.evaluate(LINES)
    assert any(text == "ZD-4711" for text, _ in lines)
    assert [(text, n) for text, n in lines if n != 1] == []
    screenshot(page, "staff-audit.png")

    page.goto(f"{live_server.url}/staff/audit?action=erasure")
    actions = page.get_by_test_id("audit-entry").locator("td:nth-child(3) a").evaluate_all(
        "links => links.map(a => a.title)")  # the action's code; the link reads it in words
    assert "person.erased_all" in actions, actions
    assert {"erasure.logged", "erasure.completed"} <= set(actions)


def test_the_audit_log_fits_a_phone(browser: Browser, live_server: LiveServer, desk: Desk) -> None:
    erasures(live_server, desk)
    context = browser.new_context(viewport={"width": 375, "height": 812}, locale="en-GB")
    try:
        page = context.new_page()
        sign_in(page, live_server.url, desk.staff)
        page.goto(f"{live_server.url}/staff/audit")
        expect(page.get_by_test_id("audit-entry").first).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        # each value under its column's name, a time still on one line
        assert [(text, n) for text, n in page.evaluate(LINES) if n != 1] == []
        screenshot(page, "staff-audit-phone.png")
    finally:
        context.close()
