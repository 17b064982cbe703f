"""What a person decides about a memory besides its words, in Chromium (issue 29, items 1 to 3),
with JavaScript and without, in English and French, on a desktop and a phone, axe clean: the
Recent conversations page lists what an app's conversation was given and stops apps using a
memory; the list's row toggles "Don't use this" in place (htmx) and shows the state; a memory's
page says in how many conversations each app used it, withholds it from one app only and sets when
it is forgotten; the list then says "Forgotten on ..."."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import BrowserContext, Page, expect

from portal.domain.apps import App, app_of

from ..axe import violations
from ..screenshots import screenshot
from .conftest import CAT, TEA, LiveServer, Person, row, sign_in

PHONE = {"width": 375, "height": 812}


def talked(live_server: LiveServer, person: Person, name: str = "Support bot") -> App:
    """An app of the person's tenant whose assistant recalled their green tea in one conversation."""
    key, _token = live_server.runtime.api_keys.create(person.place.scope, ("memories:read",), name=name)
    app = app_of(key)
    live_server.runtime.service.for_app(app, conversation_ref="e2e-conversation").recall(person.place, "green tea")
    return app


def test_conversations_dont_use_this_one_app_and_forget_after_with_javascript(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, person: Person,
) -> None:
    found: list[str] = []
    page = new_context(bypass_csp=True).new_page()
    sign_in(page, live_server.url, person)
    page.goto(f"{live_server.url}/memories/conversations")
    expect(page.get_by_test_id("no-conversations")).to_be_visible()
    found += violations(page, "recent conversations, none yet")
    bot = talked(live_server, person)
    page.goto(f"{live_server.url}/memories")
    page.get_by_role("link", name="Recent conversations").click()
    conversation = page.get_by_test_id("conversation")
    expect(conversation).to_have_count(1)
    expect(conversation.get_by_role("heading")).to_contain_text("Support bot")
    given = conversation.get_by_test_id("conversation-memory").filter(has_text=TEA)
    expect(given).to_have_count(1)
    expect(conversation).not_to_contain_text(CAT)
    found += violations(page, "recent conversations")
    given.get_by_role("button", name="Don't use this").click()
    expect(page.get_by_test_id("toast")).to_contain_text("no app will be given this memory")
    expect(given.get_by_test_id("withheld")).to_have_text("Not used by apps")
    assert live_server.runtime.service.for_app(bot).recall(person.place, "green tea") == []

    page.goto(f"{live_server.url}/memories")
    tea = row(page, TEA)
    expect(tea.get_by_test_id("withheld")).to_have_text("Not used by apps")
    expect(tea.get_by_role("button", name="Let apps use this")).to_be_hidden()  # behind ⋯, the row's one line of buttons
    tea.get_by_test_id("more").click()
    tea.get_by_role("button", name="Let apps use this").click()  # htmx: the row answers in place
    expect(tea.get_by_test_id("withheld")).to_have_count(0)
    expect(tea.get_by_role("button", name="Don't use this")).to_be_focused()  # ⋯ stays open where focus is
    expect(tea.get_by_test_id("toast")).to_contain_text("Apps may use this memory again.")
    assert len(live_server.runtime.service.for_app(bot).recall(person.place, "green tea")) == 1

    tea.get_by_role("link", name="Details").click()
    expect(page.get_by_test_id("conversation-count")).to_contain_text("Used in 1 conversation by Support bot, last on")
    page.get_by_label("One app only").select_option(label="Support bot")
    page.get_by_role("button", name="Don't let this app use it").click()
    expect(page.get_by_test_id("use-state")).to_have_text("Not given to Support bot. Other apps may be given it.")
    page.get_by_label("in a week").check()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_test_id("expiry-state")).to_contain_text("It will be forgotten on")
    found += violations(page, "a memory's page, withheld from one app, forgotten in a week")
    page.goto(f"{live_server.url}/memories")
    expect(row(page, TEA).get_by_test_id("withheld")).to_have_text("Not used by Support bot")
    expect(row(page, TEA).get_by_test_id("expiry")).to_contain_text("Forgotten on")
    found += violations(page, "the list with a memory withheld and forgotten later")
    assert found == []


def test_without_javascript_every_form_works(new_context: Callable[..., BrowserContext], live_server: LiveServer,
                                             person: Person) -> None:
    talked(live_server, person)
    page = new_context(java_script_enabled=False).new_page()
    sign_in(page, live_server.url, person)
    row(page, CAT).get_by_test_id("more").click()  # a disclosure: no JavaScript needed
    row(page, CAT).get_by_role("button", name="Don't use this").click()
    expect(page).to_have_url(f"{live_server.url}/memories#m-{person.memory_ids[CAT]}")
    expect(row(page, CAT).get_by_test_id("withheld")).to_have_text("Not used by apps")
    expect(page.get_by_test_id("toast")).to_contain_text("no app will be given this memory")
    page.goto(f"{live_server.url}/memories/{person.memory_ids[CAT]}/history")
    page.get_by_label("on a date").check()
    page.get_by_label("Date", exact=True).fill("2031-05-17")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_test_id("expiry-state")).to_have_text(
        "It will be forgotten on May 17, 2031, with every earlier version.")
    page.goto(f"{live_server.url}/memories")
    expect(row(page, CAT).get_by_test_id("expiry")).to_have_text("Forgotten on May 17, 2031")
    page.get_by_label("Forget what the assistant learns after").select_option("90")
    page.get_by_test_id("learnt-days").get_by_role("button", name="Save").click()
    expect(page.get_by_test_id("toast")).to_contain_text("Saved: it applies to what the assistant learns")
    expect(page.get_by_label("Forget what the assistant learns after")).to_have_value("90")
    page.goto(f"{live_server.url}/memories/conversations")
    given = page.get_by_test_id("conversation-memory").filter(has_text=TEA)
    given.get_by_role("button", name="Don't use this").click()
    expect(page).to_have_url(f"{live_server.url}/memories/conversations")
    expect(given.get_by_test_id("withheld")).to_have_text("Not used by apps")


def test_in_french_on_a_phone(new_context: Callable[..., BrowserContext], live_server: LiveServer,
                              french_person: Person) -> None:
    talked(live_server, french_person)
    page: Page = new_context(bypass_csp=True, viewport=PHONE).new_page()  # the account speaks French
    sign_in(page, live_server.url, french_person)
    page.goto(f"{live_server.url}/memories/conversations")
    expect(page.get_by_role("heading", level=1)).to_have_text("Conversations récentes")
    given = page.get_by_test_id("conversation-memory").filter(has_text=TEA)
    given.get_by_role("button", name="Ne pas utiliser").click()
    expect(given.get_by_test_id("withheld")).to_have_text("Non utilisé par les applications")
    found = violations(page, "conversations récentes, sur un téléphone")
    page.goto(f"{live_server.url}/memories/{french_person.memory_ids[TEA]}/history")
    expect(page.get_by_test_id("conversation-count")).to_contain_text("Utilisé dans 1 conversation par Support bot")
    page.get_by_label("dans un mois").check()
    page.get_by_role("button", name="Enregistrer").last.click()
    expect(page.get_by_test_id("expiry-state")).to_contain_text("Il sera oublié le")
    found += violations(page, "la page d'un souvenir, sur un téléphone")
    page.goto(f"{live_server.url}/memories")
    expect(row(page, TEA).get_by_test_id("expiry")).to_contain_text("Oublié le")
    found += violations(page, "la liste, sur un téléphone")
    assert found == []


# Every visible control of a row's open ⋯ menu, with its box.
MENU_CONTROLS = """el => Array.from(el.querySelectorAll('details.more button, details.more a, details.more summary'))
  .filter(c => c.getClientRects().length)
  .map(c => { const r = c.getBoundingClientRect();
              return [c.textContent.trim().replace(/\\s+/g, ' ').slice(0, 30), Math.round(r.width), Math.round(r.height)]; })"""


def test_forget_after_from_the_rows_menu(new_context: Callable[..., BrowserContext], live_server: LiveServer,
                                         person: Person) -> None:
    """Issue 38, item 8: the row's ⋯ menu offers "Forget after…" beside "Don't use this", with
    JavaScript (the row answers in place, focus stays in the menu) and without (a form), on a
    desktop and on a phone (44 px targets, inside the screen), axe clean."""
    found: list[str] = []
    for device, options in (("desktop", {}), ("phone", {"viewport": PHONE})):
        page = new_context(bypass_csp=True, **options).new_page()
        sign_in(page, live_server.url, person)
        tea = row(page, TEA)
        tea.get_by_test_id("more").click()
        tea.get_by_text("Forget after…").click()
        found += violations(page, f"the row's menu, forget after open ({device})")
        tea.scroll_into_view_if_needed()
        screenshot(page, f"memories-forget-after-menu-{device}.png")
        if device == "phone":
            small = [c for c in tea.evaluate(MENU_CONTROLS) if c[1] < 44 or c[2] < 44]
            assert small == [], small
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        tea.get_by_role("button", name="a week").click()  # htmx: the row answers in place
        expect(tea.get_by_test_id("expiry")).to_contain_text("Forgotten on")
        expect(tea.get_by_test_id("toast")).to_contain_text("It will be forgotten on")
        expect(tea.get_by_test_id("forget-after")).to_be_focused()
        tea.get_by_text("Forget after…").click()
        tea.get_by_role("button", name="Keep it until I forget it").click()
        expect(tea.get_by_test_id("expiry")).to_have_count(0)
        expect(tea.get_by_test_id("toast")).to_contain_text("Kept until you forget it.")
        assert live_server.runtime.service.get(person.place, person.memory_ids[TEA]).expires_at is None

    plain = new_context(java_script_enabled=False).new_page()
    sign_in(plain, live_server.url, person)
    cat = row(plain, CAT)
    cat.get_by_test_id("more").click()  # disclosures: no JavaScript needed
    cat.get_by_text("Forget after…").click()
    cat.get_by_role("button", name="a year").click()
    expect(plain).to_have_url(f"{live_server.url}/memories#m-{person.memory_ids[CAT]}")
    expect(row(plain, CAT).get_by_test_id("expiry")).to_contain_text("Forgotten on")
    expect(plain.get_by_test_id("toast")).to_contain_text("It will be forgotten on")
    row(plain, CAT).get_by_test_id("more").click()
    row(plain, CAT).get_by_text("Forget after…").click()
    row(plain, CAT).get_by_role("link", name="a date…").click()  # a date of one's own: the memory's page
    expect(plain).to_have_url(f"{live_server.url}/memories/{person.memory_ids[CAT]}/history#expiry")
    expect(plain.get_by_role("heading", level=1)).to_have_text("About this memory")
    assert found == []
