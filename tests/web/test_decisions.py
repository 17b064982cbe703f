"""What a person decides about a memory besides its words, in the portal (issue 29, items 1 to 3):
the Recent conversations page (per conversation the app, its time and the memories it was given,
never a word of it), "used in N conversations by App" on a memory's page, "don't use this" for
every app or one app (the list says so, the app is then given nothing of it), "forget after" on a
memory (the list says when) and how long what the assistant learns is kept, for the person and as a
tenant's default in the admin console. Plain forms as a browser without JavaScript sends them,
htmx's row answer, English and French, CSRF, and another person's memory out of reach."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from flask.testing import FlaskClient

from portal.domain.apps import App, app_of

from .conftest import HX, PASSWORD, World, csrf_token_of, page_text


def connected(world: World, name: str = "Support bot") -> App:
    key, _token = world.runtime.api_keys.create(world.tenant_id, ("memories:read", "memories:write"), name=name)
    return app_of(key)


def test_recent_conversations_show_the_app_the_time_and_the_memories_given_never_the_words(any_world: World) -> None:
    world = any_world
    tea = world.remember(world.ada, "Prefers green tea")
    cat = world.remember(world.ada, "Has a cat named Tom")
    bot = connected(world)
    world.runtime.service.for_app(bot, conversation_ref="conv-secret-words-1").recall(world.ada.place, "green tea")
    client = world.client(world.ada)
    listed = client.get("/memories").get_data(as_text=True)
    assert 'href="/memories/conversations"' in listed
    page = client.get("/memories/conversations")
    assert page.status_code == 200
    html, said = page.get_data(as_text=True), page_text(page)
    assert "Recent conversations" in said and "Support bot" in said
    assert "Prefers green tea" in said and "Has a cat named Tom" not in said
    assert "conv-secret-words-1" not in html  # not even the assistant's reference
    assert f'href="/memories/{tea.id}/edit"' in html and f'action="/memories/{tea.id}/forget"' in html
    assert f'action="/memories/{tea.id}/use"' in html and "Don't use this" in said
    assert html.count('data-testid="conversation"') == 1
    assert cat.id not in html


def test_no_conversation_yet_says_what_will_appear_in_english_and_french(world: World) -> None:
    said = page_text(world.client(world.ada).get("/memories/conversations"))
    assert "No conversation has used your memories yet." in said
    said = page_text(world.client(world.bob).get("/memories/conversations"))
    assert "Conversations récentes" in said and "Aucune conversation n'a encore utilisé vos souvenirs." in said


def test_a_memory_says_in_how_many_conversations_each_app_used_it(world: World) -> None:
    tea = world.remember(world.ada, "Prefers green tea")
    bot = connected(world)
    for ref in ("a", "b"):
        world.runtime.service.for_app(bot, conversation_ref=ref).recall(world.ada.place, "green tea")
    said = page_text(world.client(world.ada).get(f"/memories/{tea.id}/history"))
    assert "Used in 2 conversations by Support bot, last on Mar 1, 2026" in said
    bob_tea = world.remember(world.bob, "Aime le thé vert")
    world.runtime.service.for_app(bot, conversation_ref="c").recall(world.bob.place, "thé vert")
    said = page_text(world.client(world.bob).get(f"/memories/{bob_tea.id}/history"))
    assert "Utilisé dans 1 conversation par Support bot, pour la dernière fois le 1 mars 2026" in said


def test_dont_use_this_for_every_app_without_javascript_and_back(world: World) -> None:
    tea = world.remember(world.ada, "Prefers green tea")
    bot = connected(world)
    view = world.runtime.service.for_app(bot)
    client = world.client(world.ada)
    assert "Don't use this" in page_text(client.get("/memories"))
    answer = client.post(f"/memories/{tea.id}/use", data={"use": "0"})
    assert answer.status_code == 303 and answer.headers["Location"].endswith(f"/memories#m-{tea.id}")
    said = page_text(client.get("/memories"))
    assert "Kept, but no app will be given this memory until you let them." in said
    assert "Not used by apps" in said and "Let apps use this" in said and "Prefers green tea" in said
    assert view.recall(world.ada.place, "green tea") == []
    audit = [e for e in world.runtime.store.audit_trail() if e.action == "memory.use_changed"]
    assert [(e.actor_id, e.reason_code) for e in audit] == [(world.ada.id, "*")]
    answer = client.post(f"/memories/{tea.id}/use", data={"use": "1", "back": "conversations"})
    assert answer.headers["Location"].endswith("/memories/conversations")
    assert [h.memory.id for h in view.recall(world.ada.place, "green tea")] == [tea.id]
    assert "Not used by apps" not in page_text(client.get("/memories"))


def test_the_rows_toggle_with_htmx_answers_the_row_and_a_toast(world: World) -> None:
    tea = world.remember(world.ada, "Prefers green tea")
    answer = world.client(world.ada).post(f"/memories/{tea.id}/use", data={"use": "0"}, headers=HX)
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200 and html.lstrip().startswith(f'<li id="m-{tea.id}"')
    assert "Not used by apps" in html and 'hx-swap-oob' in html and "Let apps use this" in html


def test_one_app_only_from_the_memorys_page_in_french(world: World) -> None:
    thé = world.remember(world.bob, "Aime le thé vert")
    bot, desk = connected(world), connected(world, "Claude Desktop")
    client = world.client(world.bob)
    page = client.get(f"/memories/{thé.id}/history")
    html = page.get_data(as_text=True)
    assert f'<option value="{bot.id}">Support bot</option>' in html and "Claude Desktop" in html
    assert "Ne pas utiliser" in page_text(page)
    answer = client.post(f"/memories/{thé.id}/use", data={"use": "0", "app": bot.id, "back": "memory"})
    assert answer.status_code == 303 and answer.headers["Location"].endswith(f"/memories/{thé.id}/history#decisions")
    said = page_text(client.get("/memories"))
    assert "Support bot ne recevra plus ce souvenir." in said and "Non utilisé par Support bot" in said
    assert world.runtime.service.for_app(bot).recall(world.bob.place, "thé vert") == []
    assert len(world.runtime.service.for_app(desk).recall(world.bob.place, "thé vert")) == 1
    assert client.post(f"/memories/{thé.id}/use", data={"use": "0", "app": "no-such-app"}).status_code == 404
    assert client.post(f"/memories/{thé.id}/use", data={"use": "maybe"}).status_code == 400


def test_forget_after_a_choice_a_date_and_never(world: World) -> None:
    tea = world.remember(world.ada, "Prefers green tea")
    client = world.client(world.ada)
    page = client.get(f"/memories/{tea.id}/history")
    assert f'action="/memories/{tea.id}/expiry"' in page.get_data(as_text=True)
    assert "Kept until you forget it." in page_text(page)
    answer = client.post(f"/memories/{tea.id}/expiry", data={"after": "week", "back": "memory"})
    assert answer.status_code == 303
    expires = world.memory(world.ada, tea.id).expires_at
    assert expires is not None and timedelta(days=6) < expires - datetime(2026, 3, 1, 9, tzinfo=UTC) < timedelta(days=8)
    said = page_text(client.get("/memories"))
    assert "Forgotten on Mar 8, 2026" in said
    assert "It will be forgotten on March 8, 2026, with every earlier version." in said
    client.post(f"/memories/{tea.id}/expiry", data={"after": "date", "date": "2027-01-15"})
    assert world.memory(world.ada, tea.id).expires_at == datetime(2027, 1, 15, tzinfo=UTC)
    assert "Oublié le" not in page_text(client.get("/memories"))
    client.post(f"/memories/{tea.id}/expiry", data={"after": "never"})
    assert world.memory(world.ada, tea.id).expires_at is None
    assert "Forgotten on" not in page_text(client.get("/memories"))
    for wrong in ({"after": "date", "date": "2020-01-01"}, {"after": "date", "date": "soon"}, {"after": "decade"}):
        answer = client.post(f"/memories/{tea.id}/expiry", data=wrong)
        assert answer.status_code == 303, wrong
        assert world.memory(world.ada, tea.id).expires_at is None
    assert "When to forget must be later than now." in page_text(client.get(f"/memories/{tea.id}/history"))


def test_forget_after_in_french(world: World) -> None:
    thé = world.remember(world.bob, "Aime le thé vert")
    client = world.client(world.bob)
    client.post(f"/memories/{thé.id}/expiry", data={"after": "day"})
    said = page_text(client.get("/memories"))
    assert "Oublié le 2 mars 2026" in said and "Il sera oublié le 2 mars 2026" in said


def test_how_long_what_the_assistant_learns_is_kept_person_and_tenant(world: World) -> None:
    client = world.client(world.ada)
    said = page_text(client.get("/memories"))
    assert "Forget what the assistant learns after" in said and "your organisation's default (never)" in said
    answer = client.post("/account/learnt-days", data={"days": "90"})
    assert answer.status_code == 303
    assert world.runtime.service.decisions.learnt_days(world.ada.place) == (90, None)
    assert "Saved: it applies to what the assistant learns from now on." in page_text(client.get("/memories"))
    assert 'value="90" selected' in client.get("/memories").get_data(as_text=True)
    world.runtime.tenants.set_learnt_days(world.tenant_id, 180)
    client.post("/account/learnt-days", data={"days": ""})
    assert world.runtime.service.decisions.learnt_days(world.ada.place) == (None, 180)
    assert "your organisation's default (6 months)" in page_text(client.get("/memories"))
    assert "la valeur par défaut de votre organisation (6 mois)" in page_text(world.client(world.bob).get("/memories"))
    assert client.post("/account/learnt-days", data={"days": "-1"}).status_code == 400
    assert client.post("/account/learnt-days", data={"days": "99999"}).status_code == 400
    actions = [e.action for e in world.runtime.store.audit_trail()]
    assert actions.count("person.learnt_days_set") == 2


def test_an_admin_sets_a_tenants_default_with_an_audit_entry(world: World) -> None:
    admin = world.runtime.accounts.create("root@example.com", "Root", world.tenant_id, "admin", PASSWORD)
    client = world.client(admin)
    page = client.get("/admin/")
    assert f'action="/admin/tenants/{world.tenant_id}/learnt-days"' in page.get_data(as_text=True)
    assert client.post(f"/admin/tenants/{world.tenant_id}/learnt-days", data={"days": "365"}).status_code == 303
    assert world.runtime.tenants.learnt_days(world.ada.place) == 365
    assert "The default for what the assistant learns was changed." in page_text(client.get("/admin/"))
    entries = [e for e in world.runtime.records.audit.query(None) if e.action == "tenant.learnt_days_set"]
    assert [(e.actor_id, e.scope, e.counts) for e in entries] == [(admin.id, world.tenant_id, {"days": 365})]
    assert client.post("/admin/tenants/nope/learnt-days", data={"days": "30"}).status_code == 404
    member = world.client(world.ada)
    assert member.post(f"/admin/tenants/{world.tenant_id}/learnt-days", data={"days": "0"}).status_code in (403, 404)
    assert world.runtime.tenants.learnt_days(world.ada.place) == 365


def test_another_persons_memory_is_not_found(world: World) -> None:
    chloes = world.remember(world.chloe, "Keeps bees")
    bot = connected(world)
    client = world.client(world.ada)
    assert client.post(f"/memories/{chloes.id}/use", data={"use": "0"}).status_code == 404
    assert client.post(f"/memories/{chloes.id}/use", data={"use": "0", "app": bot.id}).status_code == 404
    assert client.post(f"/memories/{chloes.id}/expiry", data={"after": "day"}).status_code == 404
    memory = world.memory(world.chloe, chloes.id)
    assert memory.withheld == () and memory.expires_at is None


@pytest.fixture
def browser(world: World) -> FlaskClient:
    client = world.app(csrf=True).test_client()
    token = csrf_token_of(client.get("/login"))
    answer = client.post("/login", data={"email": "ada@example.com", "password": PASSWORD, "csrf_token": token})
    assert answer.status_code == 303
    return client


def test_tokenless_posts_are_refused_and_change_nothing(world: World, browser: FlaskClient) -> None:
    tea = world.remember(world.ada, "Prefers green tea")
    for path, data in ((f"/memories/{tea.id}/use", {"use": "0"}), (f"/memories/{tea.id}/expiry", {"after": "day"}),
                       ("/account/learnt-days", {"days": "30"})):
        assert browser.post(path, data=data).status_code == 400, path
        assert browser.post(path, data=data, headers=HX).status_code == 400, path
    memory = world.memory(world.ada, tea.id)
    assert memory.withheld == () and memory.expires_at is None
    assert world.runtime.service.decisions.learnt_days(world.ada.place) == (None, None)
    token = csrf_token_of(browser.get(f"/memories/{tea.id}/history"))
    assert browser.post(f"/memories/{tea.id}/use", data={"use": "0", "csrf_token": token}).status_code == 303
    assert world.memory(world.ada, tea.id).withheld == ("*",)


def more_menu(html: str, memory_id: str) -> str:
    """The row's ⋯ menu, as the list shows it."""
    row = html[html.index(f'<li id="m-{memory_id}"'):]
    start = row.index('<details class="more"')
    return row[start:row.index("</details>\n  </div>", start)]


def test_forget_after_is_in_the_rows_menu_and_works_without_javascript(world: World) -> None:
    """Issue 38, item 8: when a memory is forgotten was set only on a page behind "History"; the
    row's ⋯ menu offered "Don't use this" alone. Its "Forget after…" now sets it, as a plain form
    answered by a 303 to the row with a toast."""
    tea = world.remember(world.ada, "Prefers green tea")
    client = world.client(world.ada)
    menu = more_menu(client.get("/memories").get_data(as_text=True), tea.id)
    assert "Forget after…" in menu and f'action="/memories/{tea.id}/expiry"' in menu
    assert [value for value in ("day", "week", "month", "year") if f'name="after" value="{value}"' in menu] == [
        "day", "week", "month", "year"]
    assert f'href="/memories/{tea.id}/history#expiry"' in menu  # a date of one's own: on the memory's page
    assert 'value="never"' not in menu  # nothing set yet: nothing to take back
    answer = client.post(f"/memories/{tea.id}/expiry", data={"after": "month"})
    assert answer.status_code == 303 and answer.headers["Location"] == f"/memories#m-{tea.id}"
    expires = world.memory(world.ada, tea.id).expires_at  # a month: 30 days from now
    assert expires is not None and expires.date() == datetime(2026, 3, 31, tzinfo=UTC).date()
    page = client.get("/memories")
    said = page_text(page)
    assert "Forgotten on Mar 31, 2026" in said and "It will be forgotten on March 31, 2026" in said
    menu = more_menu(page.get_data(as_text=True), tea.id)
    assert 'name="after" value="never"' in menu and "Keep it until I forget it" in menu


def test_forget_after_from_the_row_with_htmx_answers_the_row_and_a_toast(world: World) -> None:
    tea = world.remember(world.ada, "Prefers green tea")
    answer = world.client(world.ada).post(f"/memories/{tea.id}/expiry", data={"after": "day"}, headers=HX)
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200 and html.lstrip().startswith(f'<li id="m-{tea.id}"')
    assert "Forgotten on Mar 2, 2026" in page_text(answer) and 'hx-swap-oob' in html
    assert "It will be forgotten on March 2, 2026, with every earlier version." in html
    assert '<details class="more" open>' in html  # the menu stays open where keyboard focus was
    wrong = world.client(world.ada).post(f"/memories/{tea.id}/expiry", data={"after": "decade"}, headers=HX)
    assert wrong.status_code == 200 and "toast-error" in wrong.get_data(as_text=True)
    expires = world.memory(world.ada, tea.id).expires_at  # the refused choice changed nothing
    assert expires is not None and expires.date() == datetime(2026, 3, 2, tzinfo=UTC).date()


def test_the_memorys_page_is_named_for_what_it_holds(world: World) -> None:
    """It held the wordings, the apps' uses, which apps may use it and when it is forgotten, under
    "History of a memory", behind a "History" link."""
    tea = world.remember(world.ada, "Prefers green tea")
    list_html = world.client(world.ada).get("/memories").get_data(as_text=True)
    assert f'<a class="button subtle" href="/memories/{tea.id}/history">Details</a>' in list_html
    page = world.client(world.ada).get(f"/memories/{tea.id}/history")
    text = page_text(page)
    assert "<title>About this memory · Memory portal</title>" in page.get_data(as_text=True)
    assert "About this memory" in text and "History of a memory" not in text
    for section in ("Wordings", "Used by apps", "Which apps may use it", "When it is forgotten"):
        assert section in text, section
    french = world.client(world.bob)
    thé = world.remember(world.bob, "Aime le thé vert")
    assert "À propos de ce souvenir" in page_text(french.get(f"/memories/{thé.id}/history"))
    assert ">Détails</a>" in french.get("/memories").get_data(as_text=True)
