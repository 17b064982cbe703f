"""The person's "Connected apps" page (issue 18): each app of their tenant that used their memory,
when last and what it did (counts, never words), with pause learning, block and resume — which the
service then holds the app to; the memory's history says which app used it when; staff see the
same counts. Plain forms: it works without JavaScript and with the AI off."""

from __future__ import annotations

import re

import pytest

from portal.domain.apps import app_of
from portal.domain.errors import Refused

from .conftest import World, page_text


def connected(world: World, name: str = "Support bot"):  # type: ignore[no-untyped-def]
    key, _token = world.runtime.api_keys.create(world.tenant_id, ("memories:read", "memories:write"), name=name)
    return app_of(key)


def test_the_page_shows_each_app_and_its_counts_and_the_person_pauses_blocks_and_resumes_it(world: World) -> None:
    tea = world.remember(world.ada, "Prefers green tea")
    bot = connected(world)
    view = world.runtime.service.for_app(bot)
    view.recall(world.ada.place, "green tea")
    view.recall(world.ada.place, "tea")
    view.remember(world.ada.place, "Works night shifts")
    client = world.client(world.ada)
    assert "Connected apps" in page_text(client.get("/memories"))
    page = client.get("/account/apps")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    card = html[html.index(f'id="app-{bot.id}"'):]
    assert "Support bot" in card and "2 memories used" in card
    assert re.search(r'data-action="recalled">2<', card) and re.search(r'data-action="remembered">1<', card)
    assert "green tea" not in html and "night shifts" not in html  # counts, never words

    assert client.post(f"/account/apps/{bot.id}", data={"action": "pause"}).status_code == 303
    assert "Support bot may still read your memory but learns nothing new." in page_text(client.get("/account/apps"))
    with pytest.raises(Refused) as refused:
        view.remember(world.ada.place, "Likes jazz")
    assert refused.value.code == "paused"
    assert [h.memory.id for h in view.recall(world.ada.place, "green tea")] == [tea.id]  # it may still read

    assert client.post(f"/account/apps/{bot.id}", data={"action": "block"}).status_code == 303
    page = page_text(client.get("/account/apps"))
    assert "Support bot can no longer read or change your memory." in page and "blocked" in page
    for call in (lambda: view.recall(world.ada.place, "tea"), lambda: view.list(world.ada.place),
                 lambda: view.get(world.ada.place, tea.id), lambda: view.portrait(world.ada.place)):
        with pytest.raises(Refused) as refused:
            call()
        assert refused.value.code == "app_blocked"
    assert view.list(world.bob.place).items == []  # Ada's block is hers: Bob's place opens for the app

    assert client.post(f"/account/apps/{bot.id}", data={"action": "resume"}).status_code == 303
    assert "Support bot may use your memory again." in page_text(client.get("/account/apps"))
    assert view.get(world.ada.place, tea.id).id == tea.id
    actions = [e.action for e in world.runtime.records.audit.query(None, subject=world.ada.owner_id)]
    assert {"person.app_paused", "person.app_blocked", "person.app_resumed"} <= set(actions)


def test_only_an_app_of_the_tenant_and_a_known_action_are_taken(world: World) -> None:
    bot = connected(world)
    other_tenant = world.runtime.tenants.create("Globex").id
    stranger, _ = world.runtime.api_keys.create(other_tenant, ("memories:read",), name="Support bot")
    client = world.client(world.ada)
    assert client.post(f"/account/apps/{app_of(stranger).id}", data={"action": "block"}).status_code == 404
    assert client.post("/account/apps/no-such-app", data={"action": "block"}).status_code == 404
    assert client.post(f"/account/apps/{bot.id}", data={"action": "erase"}).status_code == 400
    assert world.runtime.service.connected_apps(world.ada.place, {}) == []


def test_a_person_sees_their_own_apps_only_and_none_before_any_use(world: World) -> None:
    bot = connected(world)
    world.runtime.service.for_app(bot).remember(world.bob.place, "Aime le jazz")
    assert "No app has used your memory yet." in page_text(world.client(world.ada).get("/account/apps"))
    bob = page_text(world.client(world.bob).get("/account/apps"))
    assert "Support bot" in bob


def test_the_memory_history_says_which_app_used_it_and_when(world: World) -> None:
    tea = world.remember(world.ada, "Prefers green tea")
    bot = connected(world, "Claude Desktop")
    world.runtime.service.for_app(bot).recall(world.ada.place, "green tea")
    world.runtime.service.for_app(bot).recall(world.ada.place, "tea")
    text = page_text(world.client(world.ada).get(f"/memories/{tea.id}/history"))
    assert "Used by Claude Desktop on Mar 1, 2026: recalled it (2 times)" in text
    other = world.remember(world.ada, "Lives in Lyon")
    assert "No app has used this memory." in page_text(world.client(world.ada).get(f"/memories/{other.id}/history"))


def test_erase_everything_keeps_what_the_person_decided_about_each_app(world: World) -> None:
    bot = connected(world)
    world.runtime.service.for_app(bot).remember(world.ada.place, "Works night shifts")
    world.runtime.service.set_app_control(world.ada.place, bot.id, "blocked")
    world.runtime.service.forget_all(world.ada.place)
    with pytest.raises(Refused):
        world.runtime.service.for_app(bot).list(world.ada.place)
    summaries = world.runtime.service.connected_apps(world.ada.place, {bot.id: bot})
    assert [(s.app.name, s.control, s.memories) for s in summaries] == [("Support bot", "blocked", 0)]


def test_the_download_names_each_app_that_used_the_memory_and_how(world: World) -> None:
    tea = world.remember(world.ada, "Prefers green tea")
    bot = connected(world)
    world.runtime.service.for_app(bot).recall(world.ada.place, "green tea")
    world.runtime.service.set_app_control(world.ada.place, bot.id, "paused")
    answer = world.client(world.ada).get("/account/export.json")
    assert answer.status_code == 200
    (entry,) = answer.json["apps"]
    assert (entry["app_id"], entry["name"], entry["control"]) == (bot.id, "Support bot", "paused")
    assert [(u["memory_id"], u["action"], u["count"]) for u in entry["uses"]] == [(tea.id, "recalled", 1)]


def test_an_app_that_only_reads_is_said_so_and_its_temporary_conversations_counted(world: World) -> None:
    """Issue 29 (item 5): an app that recalled or read but never remembered, corrected or forgot
    only reads; its conversations kept temporary are counted (nothing learnt from them)."""
    world.remember(world.ada, "Prefers green tea")
    reader, writer = connected(world, "Claude Desktop"), connected(world, "Support bot")
    view = world.runtime.service.for_app(reader)
    view.recall(world.ada.place, "green tea")
    for n in range(3):
        assert view.consolidate(world.ada.place, "User: zqmarlo is a secret", f"c{n}", temporary=True).status == \
            "temporary"
    world.runtime.service.for_app(writer).remember(world.ada.place, "Works night shifts")
    html = world.client(world.ada).get("/account/apps").get_data(as_text=True)
    reads = html[html.index(f'id="app-{reader.id}"'):]
    reads = reads[:reads.index("</li>")]
    writes = html[html.index(f'id="app-{writer.id}"'):]
    writes = writes[:writes.index("</li>")]
    assert "Has only read your memories so far" in reads and "Has only read your memories" not in writes
    assert "3 conversations kept temporary: nothing learnt" in " ".join(reads.split())
    assert "kept temporary" not in writes
    assert 'data-action="temporary"' not in html  # a conversation, not a memory: not among the memory counts
    assert "zqmarlo" not in html

    world.runtime.service.for_app(writer).consolidate(world.ada.place, "User: hello", "c9", temporary=True)
    page = " ".join(world.client(world.ada).get("/account/apps").get_data(as_text=True).split())
    assert "1 conversation kept temporary: nothing learnt" in page


def test_the_only_reads_wording_in_french(world: World) -> None:
    world.remember(world.bob, "Aime le jazz")
    reader = connected(world, "Claude Desktop")
    view = world.runtime.service.for_app(reader)
    view.list(world.bob.place)
    view.consolidate(world.bob.place, "User: rien", "c1", temporary=True)
    view.consolidate(world.bob.place, "User: rien", "c2", temporary=True)
    page = page_text(world.client(world.bob).get("/account/apps"))
    assert "N'a fait que lire vos souvenirs jusqu'ici" in page
    assert "2 conversations restées temporaires : rien n'en a été appris" in page
    assert "Has only read" not in page


def test_the_download_names_an_app_s_temporary_conversations_without_a_word(world: World) -> None:
    reader = connected(world)
    world.runtime.service.for_app(reader).consolidate(world.ada.place, "User: zqmarlo", "c1", temporary=True)
    answer = world.client(world.ada).get("/account/export.json")
    (entry,) = answer.json["apps"]
    assert [(u["memory_id"], u["action"], u["count"]) for u in entry["uses"]] == [(None, "temporary", 1)]
    assert "zqmarlo" not in answer.get_data(as_text=True)
