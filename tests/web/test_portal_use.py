"""The portal as people use it (issue 17): one text limit said everywhere, pinned memories first,
the pause panel true with the AI off, the kind filter applied on change, toasts that can be
dismissed and an Undo next to the row that changed."""

from __future__ import annotations

import re

from .conftest import HX, World, page_text, row_ids


def test_one_text_limit_in_the_forms_and_in_the_refusal(world: World) -> None:
    limit = world.runtime.service.options.max_text_length
    memory = world.remember(world.ada, "I like plums")
    client = world.client(world.ada)
    for html in (client.get("/memories").get_data(as_text=True),
                 client.get(f"/memories/{memory.id}/edit", headers=HX).get_data(as_text=True)):
        [field] = re.findall(r"<textarea[^>]*>", html)
        assert f'maxlength="{limit}"' in field and f'data-limit="{limit}"' in field
        assert f"At most {limit} characters." in html  # said before anyone types
    for headers in ({}, HX):
        refused = client.post("/memories", data={"text": "x" * (limit + 1), "kind": "fact"}, headers=headers)
        assert f"at most {limit} characters" in page_text(refused if headers else client.get("/memories"))
    bob = world.client(world.bob)  # in French too
    refused = bob.post(f"/memories/{world.remember(world.bob, 'J’aime les prunes').id}",
                       data={"text": "x" * (limit + 1), "revision": "1"}, headers=HX)
    assert f"{limit} caractères au plus" in page_text(refused)


def test_pinned_memories_come_first(world: World) -> None:
    oldest = world.remember(world.ada, "I am vegetarian")
    middle = world.remember(world.ada, "I live in Leeds")
    newest = world.remember(world.ada, "I play the cello")
    client = world.client(world.ada)
    assert row_ids(client.get("/memories")) == [newest.id, middle.id, oldest.id]
    world.runtime.service.pin(world.ada.place, oldest.id)
    assert row_ids(client.get("/memories")) == [oldest.id, newest.id, middle.id]
    assert row_ids(client.get("/memories", query_string={"kind": "fact"}))[0] == oldest.id


def test_pinned_memories_are_not_repeated_on_later_pages(world: World) -> None:
    pinned = world.remember(world.ada, "Pinned: I am vegetarian")
    world.runtime.service.pin(world.ada.place, pinned.id)
    for n in range(30):
        world.remember(world.ada, f"Plain memory number {n}")
    client = world.client(world.ada)
    first = client.get("/memories")
    assert row_ids(first)[0] == pinned.id and len(row_ids(first)) == 26
    cursor = re.search(r'href="/memories\?cursor=([^"&]+)', first.get_data(as_text=True))
    assert cursor
    later = row_ids(client.get("/memories", query_string={"cursor": cursor.group(1)}))
    assert pinned.id not in later and len(later) == 5


def test_the_pause_panel_says_what_is_true_with_the_ai_off(world: World) -> None:
    client = world.client(world.ada)
    assert "The assistant may learn from your conversations." in page_text(client.get("/memories"))
    world.runtime.tenants.set_ai(world.tenant_id, False)
    text = page_text(client.get("/memories"))
    assert "The assistant may learn from your conversations." not in text
    assert "While the AI is off, the assistant learns nothing from your conversations, but apps can still save" in text


def test_the_kind_filter_applies_as_soon_as_it_changes(world: World) -> None:
    html = world.client(world.ada).get("/memories").get_data(as_text=True)
    form = re.search(r'<form class="search[^>]*>', html)
    assert form and 'hx-trigger="submit, change from:#filter-kind"' in form.group(0)
    assert re.search(r'<form class="search.*?<button type="submit">Search</button>', html, flags=re.S)  # no-JS


def test_an_undo_sits_next_to_the_changed_row_and_toasts_can_be_dismissed(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    answer = world.client(world.ada).post(
        f"/memories/{memory.id}", data={"text": "I live in York", "revision": "1"}, headers=HX)
    html = answer.get_data(as_text=True)
    row = html[:html.index("</li>")]
    assert re.search(rf'<button[^>]*hx-post="/memories/{memory.id}/undo"[^>]*>Undo</button>', row)
    toast = row[row.index('data-testid="toast"'):]  # the toast is in the row, with its Undo
    assert 'aria-label="Dismiss"' in toast and "data-autoclose" not in toast  # an Undo waits for the person
    assert re.search(r'<div id="toasts" hx-swap-oob="innerHTML">\s*</div>', html)  # one toast at a time
    plain = world.client(world.ada).post("/account/pause", headers=HX).get_data(as_text=True)
    assert "data-autoclose" in plain and 'aria-label="Dismiss"' in plain
