"""Every page of the portal, the support console and the admin console on a phone (375x812), in
English and in French (issue 27): none scrolls sideways (the document is no wider than the
window) and every control (link, button, field) is at least 44 px tall, as the README promises;
every control but a link in running text is at least 44 px wide too (issue 38: a toast's × was
30 px wide, an import's tick box 19 px).

Each person, staff member and admin walks through their pages as they meet them: signed out, too
many tries, the list with its New banner, a search that finds nothing, editing in place and as a
page, a toast, paused, the history, the confirmation pages, erase everything, importing and its
preview, forget everything about … and its preview, connected apps, the error pages; finding a
person, a person, the break-glass memories, an erasure request open and done, the erasure list, the
audit log; the admin console, a new key and the admin's confirmation pages. The walk must reach
every page the app serves: a new page (a GET view, a view that asks first, a form answered by a
page) fails this test until it is walked here.

Forms are found by their action (both languages share it), the rest by role, label or data-testid.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from flask import Flask
from playwright.sync_api import BrowserContext, Page, expect
from werkzeug.exceptions import HTTPException
from werkzeug.routing import RequestRedirect

from portal.app import create_app
from portal.bootstrap import Runtime
from portal.domain.apps import app_of
from portal.domain.people import User
from portal.domain.types import Saved

from .conftest import CAT, PASSWORD, TEA, LiveServer, Person, make_person

PHONE = {"width": 375, "height": 812}
LOCALES = {"en": "en-GB", "fr": "fr-FR"}

# Pages the walk need not reach: no HTML (the API but its docs, downloads, health, metrics,
# static files) or a redirect only (the home page; a row outside htmx goes back to the list).
NOT_PAGES = {"static", "metrics", "memories.home", "memories.row", "account.export_csv", "account.export_json",
             "staff.audit_csv"}
# Forms answered by a page of their own (not a redirect, not a fragment).
POSTED_PAGES = {"account.import_memories", "staff.open_memories", "forget_about.preview"}

# What a phone shows: the document's width, and every visible control under 44 px tall or, but a
# link in running text, under 44 px wide. A checkbox is as large as the label that holds it (a tap
# on the label ticks it).
MEASURE = """() => {
  const name = el => (el.tagName.toLowerCase() + ' "' + (el.getAttribute('aria-label') || el.textContent
    || el.getAttribute('name') || el.id || '').trim().replace(/\\s+/g, ' ').slice(0, 40) + '"');
  const small = [];
  for (const el of document.querySelectorAll(
      'a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button]')) {
    if (!el.getClientRects().length || getComputedStyle(el).visibility === 'hidden') continue;
    const box = el.matches('input[type=checkbox], input[type=radio]') && el.closest('label') || el;
    const r = box.getBoundingClientRect();
    const inline = el.matches('a[href]:not(.button)');
    if (r.height < 43.99 || (!inline && r.width < 43.99))
      small.push(name(el) + ' ' + r.width.toFixed(1) + 'x' + r.height.toFixed(1) + ' px');
  }
  const wide = document.documentElement.scrollWidth;
  const past = wide <= innerWidth ? [] : Array.from(document.body.querySelectorAll('*'))
    .filter(el => el.getBoundingClientRect().right > innerWidth + 0.5
                  && !Array.from(el.children).some(c => c.getBoundingClientRect().right > innerWidth + 0.5))
    .slice(0, 4).map(el => name(el) + ' to ' + Math.round(el.getBoundingClientRect().right) + ' px');
  return {wide, inner: innerWidth, small, past};
}"""

_numbers = itertools.count(1)


@dataclass
class Walk:
    """One walk through the pages: what each page was seen to break."""

    page: Page
    base: str
    problems: list[str] = field(default_factory=list)

    def goto(self, path: str) -> None:
        self.page.goto(self.base + path)

    def check(self, name: str) -> None:
        self.page.wait_for_load_state("load")
        seen = self.page.evaluate(MEASURE)
        if seen["wide"] > seen["inner"]:
            self.problems.append(f"{name}: {seen['wide']} px wide at {seen['inner']} ({'; '.join(seen['past'])})")
        if seen["small"]:
            self.problems.append(f"{name}: controls under 44 px: {', '.join(seen['small'])}")

    def submit(self, form: str) -> None:
        """Send a form as a browser without JavaScript would (no htmx, no confirm dialog)."""
        with self.page.expect_navigation():
            self.page.locator(form).first.evaluate("f => f.submit()")


def sign_in(page: Page, base: str, email: str) -> None:
    page.goto(f"{base}/login")
    page.locator("#email").fill(email)
    page.locator("#password").fill(PASSWORD)
    with page.expect_navigation():
        page.locator("main form button[type=submit]").click()
    assert "/login" not in page.url, f"{email} could not sign in"


def person_pages(walk: Walk, runtime: Runtime, who: Person) -> Iterator[str]:
    page, cat, tea = walk.page, who.memory_ids[CAT], who.memory_ids[TEA]
    walk.goto("/login")
    yield "sign in"
    walk.goto("/api/v1/docs")
    yield "the API's documentation"
    stranger = f"nobody{next(_numbers)}@e2e.example"
    walk.goto("/login")
    token = page.locator("input[name=csrf_token]").first.get_attribute("value") or ""
    for _ in range(40):  # the account's own limit (20 an hour) stops the guesser
        tried = page.request.post(f"{walk.base}/login", form={"csrf_token": token, "email": stranger, "password": "x"})
        if tried.status == 429:
            break
    page.locator("#email").fill(stranger)
    page.locator("#password").fill("wrong password")
    page.locator("main form button[type=submit]").click()
    expect(page.locator("main h1")).to_be_visible()
    yield "too many tries"
    page.set_content(f'<form method="post" action="{walk.base}/account/pause"><button>go</button></form>')
    with page.expect_navigation():
        page.locator("button").click()  # from another site: refused
    yield "a request from another site"

    key, _token = runtime.api_keys.create(who.place.scope, ("memories:read",), name="Support bot")
    runtime.service.for_app(app_of(key), conversation_ref="walk").recall(who.place, "green tea")
    sign_in(page, walk.base, who.email)
    expect(page.get_by_test_id("new-banner")).to_be_visible()
    yield "memories, with the New banner"
    walk.goto("/memories?q=zzzqqq")
    yield "a search that finds nothing"
    walk.goto("/memories?q=%00")
    yield "a request it cannot read (400)"
    walk.goto("/memories/nope/history")
    yield "not found"
    walk.goto("/memories")
    page.locator(f"#m-{cat} a[href$='/edit']").click()
    editing = page.locator("li.editing textarea")
    expect(editing).to_be_focused()
    yield "editing in place"
    editing.fill(CAT + ", a tabby")
    page.locator("li.editing button[type=submit]").first.click()
    expect(page.get_by_test_id("toast")).to_be_visible()
    yield "a toast with Undo"
    page.locator("#pause-panel button").click()
    expect(page.locator("#pause-panel.is-paused")).to_be_visible()
    yield "paused"
    page.locator("#pause-panel button").click()
    expect(page.locator("#pause-panel.is-paused")).to_have_count(0)
    walk.goto(f"/memories/{cat}/edit")
    yield "editing, as a page"
    walk.goto(f"/memories/{tea}/history")
    expect(page.get_by_test_id("use")).to_have_count(1)
    yield "history, used by an app (which apps may use it, when it is forgotten)"
    walk.goto(f"/memories/{cat}/history")
    yield "history, with an earlier wording"
    walk.submit("form[action$='/history/erase']")
    yield "confirm erasing earlier wordings"
    walk.goto("/memories")
    walk.submit(f"#m-{tea} form[action$='/forget']")
    yield "confirm forgetting"
    walk.goto("/account/erase")
    yield "erase everything"
    page.locator("#confirm").fill("not my address")
    with page.expect_navigation():
        page.locator("main form button[type=submit]").click()
    yield "erase everything, mistyped"
    walk.goto("/account/import")
    yield "import"
    page.locator("#import-file").set_input_files(
        {"name": "memories.txt", "mimeType": "text/plain", "buffer": f"- Keeps bees\n- {TEA}\n".encode()})
    with page.expect_navigation():
        page.locator("main form button[type=submit]").click()
    expect(page.get_by_test_id("import-summary")).to_be_visible()
    yield "import preview"
    with page.expect_navigation():
        page.locator("main form button.primary").click()
    expect(page.get_by_test_id("toast")).to_be_visible()
    yield "imported, with Undo"
    walk.goto("/memories/forget-about")
    yield "forget everything about"
    page.locator("#subject").fill("cat")
    with page.expect_navigation():
        page.locator("form[action$='/forget-about/preview'] button[type=submit]").click()
    expect(page.get_by_test_id("forget-item").first).to_be_visible()
    yield "forget everything about, its preview"
    walk.goto("/account/apps")
    expect(page.get_by_test_id("app")).to_have_count(1)
    yield "connected apps"
    walk.goto("/memories/conversations")
    expect(page.get_by_test_id("conversation")).to_have_count(1)
    yield "recent conversations"
    walk.goto("/portrait")
    page.locator("details summary").click()  # the text as the assistant reads it, opened
    expect(page.get_by_test_id("portrait-text")).to_be_visible()
    yield "the assistant's picture of you"
    walk.goto("/portrait")
    yield "the assistant's picture of me"
    walk.goto("/memories")
    walk.submit("form[action$='/account/delete']")
    yield "confirm asking to delete my account"
    with page.expect_navigation():
        page.get_by_test_id("confirm").locator("button[type=submit]").click()
    yield "asked to delete my account"


def staff_pages(walk: Walk, runtime: Runtime, staff: User, who: Person, leaving: User) -> Iterator[str]:
    page = walk.page
    sign_in(page, walk.base, staff.email)
    walk.goto("/staff/")
    yield "find a person"
    walk.goto(f"/staff/?q={who.email}")
    expect(page.get_by_test_id("person")).to_have_count(1)
    yield "search results"
    with page.expect_navigation():
        page.get_by_test_id("person").get_by_role("link").first.click()
    yield "a person"
    page.locator("#reason").select_option(index=1)
    page.locator("#view-ticket").fill("T-1")
    with page.expect_navigation():
        page.locator("form[action$='/memories'] button[type=submit]").click()
    expect(page.get_by_test_id("memory").first).to_be_visible()
    yield "break-glass memories"
    walk.goto(f"/staff/people/{leaving.id}")
    page.locator("#erasure-ticket").fill("ZD-4711")
    with page.expect_navigation():
        page.locator("form[action$='/erasure'] button[type=submit]").click()
    expect(page.get_by_test_id("state")).to_be_visible()
    request = page.url
    yield "an erasure request"
    walk.goto("/staff/erasure")
    yield "erasure requests"
    page.goto(request)
    page.locator("#confirm").fill(leaving.email)
    with page.expect_navigation():
        page.locator("main form button[type=submit]").click()
    expect(page.get_by_test_id("toast")).to_be_visible()
    yield "an erasure done, with its toast"
    walk.goto("/staff/audit")
    yield "audit log"
    walk.goto("/staff/audit?action=erasure")
    yield "audit log, erasures"


def admin_pages(walk: Walk, admin: User, staff: User, who: User) -> Iterator[str]:
    page = walk.page
    sign_in(page, walk.base, admin.email)
    walk.goto("/admin/")
    yield "admin console"
    page.locator("#key-tenant").select_option(value=admin.tenant_id)
    with page.expect_navigation():
        page.locator("form[action$='/admin/keys'] button[type=submit]").click()
    expect(page.get_by_test_id("new-key")).to_be_visible()
    yield "a new key, shown once"
    walk.submit("form[action*='/revoke']")
    yield "confirm revoking a key"
    walk.goto("/admin/")
    walk.submit(f"form[action$='/staff/{staff.id}/disable']")
    yield "confirm disabling a staff account"
    walk.goto("/admin/")
    walk.submit(f"form[action$='/staff/{staff.id}/remove']")
    yield "confirm removing a staff account"
    walk.goto(f"/staff/people/{who.id}")
    yield "a person, for an admin"
    walk.submit("form[action$='/end-sessions']")
    yield "confirm ending a person's sessions"


def pages_of(app: Flask) -> set[str]:
    """The views that answer a page: every GET but those in NOT_PAGES, the API's and health's, and
    every POST that asks first or is answered by a page."""
    found = set()
    for rule in app.url_map.iter_rules():
        endpoint = rule.endpoint
        if endpoint in NOT_PAGES or endpoint.startswith(("health.", "mem0.")) or (
                endpoint.startswith("api.") and endpoint != "api.docs"):
            continue
        if "GET" in (rule.methods or ()) or getattr(app.view_functions[endpoint], "asks_first", False):
            found.add(endpoint)
    return found | POSTED_PAGES


def reached(app: Flask, seen: list[tuple[str, str, int]]) -> set[str]:
    """The views the server answered, from what it recorded."""
    urls = app.url_map.bind("127.0.0.1")
    found = set()
    for method, path, _status in seen:
        try:
            endpoint, _arguments = urls.match(path, method=method)
        except (HTTPException, RequestRedirect):
            continue
        found.add(endpoint)
    return found


def account(runtime: Runtime, tenant_id: str, role: str, language: str) -> User:
    n = next(_numbers)
    return runtime.accounts.create(f"{role}{n}@e2e.example", f"Sam {role.title()} {n}", tenant_id, role, PASSWORD,
                                   language=language)


@pytest.mark.parametrize("language", sorted(LOCALES))
def test_no_page_scrolls_sideways_on_a_phone_and_every_control_is_a_44px_target(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, language: str
) -> None:
    runtime, base = live_server.runtime, live_server.url
    start = len(live_server.recorder.seen)
    who = make_person(runtime, language=language)
    tenant = who.place.scope
    staff, admin = account(runtime, tenant, "staff", language), account(runtime, tenant, "admin", language)
    leaving = account(runtime, tenant, "member", language)
    assert isinstance(runtime.service.remember(leaving.place, "Keeps bees on the allotment"), Saved)
    (ada,) = runtime.accounts.find(who.email)

    problems: list[str] = []
    walks: list[tuple[str, Callable[[Walk], Iterator[str]]]] = [
        ("person", lambda walk: person_pages(walk, runtime, who)),
        ("staff", lambda walk: staff_pages(walk, runtime, staff, who, leaving)),
        ("admin", lambda walk: admin_pages(walk, admin, staff, ada)),
    ]
    for role, pages in walks:
        walk = Walk(new_context(viewport=PHONE, locale=LOCALES[language]).new_page(), base)
        for name in pages(walk):
            walk.check(f"{role}, {name}")
        problems += walk.problems

    app = create_app(runtime=runtime)  # its map of views only
    missing = pages_of(app) - reached(app, live_server.recorder.seen[start:])
    assert not missing, f"pages this walk never reached: {sorted(missing)}"
    assert problems == [], "\n".join(problems)
