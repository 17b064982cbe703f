"""Adding, editing in place, undoing, pinning, forgetting and tracing a memory, as a plain form
(answered by a 303) and through htmx (answered by the fragment that changed and a toast)."""

from __future__ import annotations

import re
from html import unescape

import pytest

from .conftest import HX, World, page_text, row_ids

OTHER_PERSON_EN = "This is about someone else. Only what concerns you can be kept."
OTHER_PERSON_FR = "Cela concerne quelqu'un d'autre. Seul ce qui vous concerne peut être gardé."


def toast_of(html: str) -> str:
    """The toast of an htmx answer (in the row it speaks of, in the place of a row that went, or out
    of band at the top of the page), as markup with its entities read (`'` not `&#39;`); screen
    readers hear its words from the live region."""
    found = re.search(r'<(div|li) class="toast[^"]*" data-testid="toast".*?</\1>', html, flags=re.S)
    assert found, "no toast"
    announced = re.search(r'<div id="announce" hx-swap-oob="innerHTML">(.*?)</div>', html, flags=re.S)
    assert announced and announced.group(1).strip() in found.group(0), "the toast is not read out"
    return unescape(found.group(0))


# ---------------------------------------------------------------- add


def test_add_by_hand_plain(world: World) -> None:
    client = world.client(world.ada)
    answer = client.post("/memories", data={"text": "I   speak **Welsh**", "kind": "fact", "importance": "4"})
    assert answer.status_code == 303 and answer.headers["Location"] == "/memories"
    page = client.get("/memories")
    memory = world.runtime.service.list(world.ada.place).items[0]
    assert (memory.text, memory.kind, memory.importance, memory.origin) == ("I speak Welsh", "fact", 4, "asserted")
    assert row_ids(page) == [memory.id]
    assert "Saved." in page_text(page)
    assert f'action="/memories/{memory.id}/undo"' in page.get_data(as_text=True)  # the toast offers Undo


def test_add_by_hand_htmx(world: World) -> None:
    answer = world.client(world.ada).post("/memories", data={"text": "I collect stamps", "kind": "preference"}, headers=HX)
    assert answer.status_code == 200
    html = answer.get_data(as_text=True)
    memory = world.runtime.service.list(world.ada.place).items[0]
    assert row_ids(answer) == [memory.id] and memory.kind == "preference"
    assert '<form id="add-form"' in html and 'hx-swap-oob="true"' in html  # a fresh, empty add form
    assert re.search(r'<textarea id="new-text"[^>]*></textarea>', html)
    assert "Saved." in toast_of(html) and f"/memories/{memory.id}/undo" in toast_of(html)


def test_add_refused_plain_shows_the_reason(world: World) -> None:
    client = world.client(world.ada)
    answer = client.post("/memories", data={"text": "Bob Durand owes me money"})
    assert answer.status_code == 303
    assert OTHER_PERSON_EN in page_text(client.get("/memories"))
    assert world.texts(world.ada) == []


def test_add_refused_htmx_retargets_the_add_form(world: World) -> None:
    answer = world.client(world.ada).post("/memories", data={"text": "   "}, headers=HX)
    assert answer.status_code == 422
    assert answer.headers["HX-Retarget"] == "#add-form" and answer.headers["HX-Reswap"] == "outerHTML"
    html = answer.get_data(as_text=True)
    assert html.lstrip().startswith('<form id="add-form"')
    assert "There is nothing to remember: the text is empty." in page_text(answer)
    assert 'role="alert"' in html and 'aria-invalid="true"' in html
    assert world.texts(world.ada) == []


def test_add_refused_keeps_what_was_typed_in_french(world: World) -> None:
    answer = world.client(world.bob).post("/memories", data={"text": "Ada Lovelace est ma voisine"}, headers=HX)
    assert answer.status_code == 422
    assert OTHER_PERSON_FR in page_text(answer)
    assert ">Ada Lovelace est ma voisine</textarea>" in answer.get_data(as_text=True)


# ---------------------------------------------------------------- edit and save


def test_edit_fragment_and_page(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds", kind="fact", importance=2)
    client = world.client(world.ada)
    fragment = client.get(f"/memories/{memory.id}/edit", headers=HX)
    html = fragment.get_data(as_text=True)
    assert html.lstrip().startswith(f'<li id="m-{memory.id}" class="memory editing"')
    assert ">I live in Leeds</textarea>" in html
    assert f'name="revision" value="{memory.revision}"' in html
    assert re.search(r'<option value="fact"\s*selected>', html) and re.search(r'<option value="2"\s*selected>', html)
    page = client.get(f"/memories/{memory.id}/edit")
    assert "<html" in page.get_data(as_text=True) and "Edit a memory" in page_text(page)
    # Cancel: htmx gets the row back, a browser without JavaScript goes back to the list.
    row = client.get(f"/memories/{memory.id}", headers=HX)
    assert row_ids(row) == [memory.id] and "editing" not in row.get_data(as_text=True)
    plain = client.get(f"/memories/{memory.id}")
    assert plain.status_code == 302 and plain.headers["Location"] == f"/memories#m-{memory.id}"


def test_save_htmx_answers_the_row_and_an_undo_toast(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    answer = world.client(world.ada).post(
        f"/memories/{memory.id}", data={"text": "I live in York", "kind": "fact", "importance": "5", "revision": "1"},
        headers=HX,
    )
    assert answer.status_code == 200
    html = answer.get_data(as_text=True)
    assert html.lstrip().startswith(f'<li id="m-{memory.id}" class="memory')
    assert "I live in York" in page_text(answer) and "Importance 5/5" in page_text(answer)
    toast = toast_of(html)
    assert "Saved." in toast and f'hx-post="/memories/{memory.id}/undo"' in toast and ">Undo<" in toast
    saved = world.memory(world.ada, memory.id)
    assert (saved.text, saved.revision, saved.importance) == ("I live in York", 2, 5)


def test_save_plain_redirects_with_303(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    client = world.client(world.ada)
    answer = client.post(f"/memories/{memory.id}", data={"text": "I live in Bath", "revision": "1"})
    assert answer.status_code == 303 and answer.headers["Location"] == f"/memories#m-{memory.id}"
    page = client.get("/memories")
    assert "I live in Bath" in page_text(page) and "Saved." in page_text(page)
    assert f'action="/memories/{memory.id}/undo"' in page.get_data(as_text=True)


@pytest.mark.parametrize("revision", ["²", "1" * 5000, "x"])
def test_a_revision_that_is_no_number_is_not_compared_and_never_a_500(world: World, revision: str) -> None:
    """Issue 38, item 21's sibling: "²" is a digit to str.isdigit but not to int(), and 5,000 digits
    are more than int() reads: both raised ValueError (500). Like any value that is no number, the
    edit is saved without the compare-and-set (the form always sends the number it was shown)."""
    memory = world.remember(world.ada, "I live in Leeds")
    answer = world.client(world.ada).post(f"/memories/{memory.id}", data={"text": "I live in York", "revision": revision})
    assert answer.status_code == 303
    assert world.memory(world.ada, memory.id).text == "I live in York"


def test_refused_edit_422_in_english_text_unchanged(world: World) -> None:
    memory = world.remember(world.ada, "I work at the bakery")
    client = world.client(world.ada)
    for headers in ({}, HX):
        answer = client.post(
            f"/memories/{memory.id}", data={"text": "I work at the bakery with Chloé", "revision": "1"}, headers=headers
        )
        assert answer.status_code == 422
        assert OTHER_PERSON_EN in page_text(answer)
        assert ">I work at the bakery with Chloé</textarea>" in answer.get_data(as_text=True)  # nothing typed is lost
        assert ("<html" in answer.get_data(as_text=True)) == (not headers)
    assert world.memory(world.ada, memory.id).text == "I work at the bakery"
    assert world.memory(world.ada, memory.id).revision == 1


def test_refused_edit_422_in_french_for_a_french_account(world: World) -> None:
    memory = world.remember(world.bob, "Je travaille à la boulangerie")
    answer = world.client(world.bob).post(
        f"/memories/{memory.id}", data={"text": "Je travaille avec Ada Lovelace", "revision": "1"}, headers=HX
    )
    assert answer.status_code == 422
    assert OTHER_PERSON_FR in page_text(answer)
    assert "Enregistrer" in page_text(answer) and "Abandonner" in page_text(answer)
    assert world.memory(world.bob, memory.id).text == "Je travaille à la boulangerie"


def test_stale_edit_is_refused_as_a_conflict(world: World) -> None:
    memory = world.remember(world.ada, "I have a cat")
    world.runtime.service.update(world.ada.place, memory.id, text="I have two cats")
    answer = world.client(world.ada).post(f"/memories/{memory.id}", data={"text": "I have a dog", "revision": "1"}, headers=HX)
    assert answer.status_code == 422
    assert "This memory was changed in the meantime. Reload it and try again." in page_text(answer)
    assert world.memory(world.ada, memory.id).text == "I have two cats"
    assert 'name="revision" value="2"' in answer.get_data(as_text=True)  # the form now holds the current revision


def test_correcting_works_with_the_ai_off(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    world.runtime.tenants.set_ai(world.tenant_id, False)
    answer = world.client(world.ada).post(f"/memories/{memory.id}", data={"text": "I live in Hull", "revision": "1"})
    assert answer.status_code == 303
    assert world.memory(world.ada, memory.id).text == "I live in Hull"


# ---------------------------------------------------------------- undo


def test_undo_an_edit(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    client = world.client(world.ada)
    client.post(f"/memories/{memory.id}", data={"text": "I live in York", "revision": "1"}, headers=HX)
    answer = client.post(f"/memories/{memory.id}/undo", headers=HX)
    assert answer.status_code == 200
    assert row_ids(answer) == [memory.id] and "I live in Leeds" in page_text(answer)
    assert "Undone." in toast_of(answer.get_data(as_text=True))
    assert world.memory(world.ada, memory.id).text == "I live in Leeds"
    # The undone wording is gone from history, too.
    assert [r.text for r in world.runtime.service.history(world.ada.place, memory.id)] == ["I live in Leeds"]


def test_undo_plain(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    client = world.client(world.ada)
    client.post(f"/memories/{memory.id}", data={"text": "I live in York", "revision": "1"})
    answer = client.post(f"/memories/{memory.id}/undo")
    assert answer.status_code == 303
    assert "Undone." in page_text(client.get("/memories"))
    assert world.memory(world.ada, memory.id).text == "I live in Leeds"


def test_undo_an_addition_removes_it(world: World) -> None:
    client = world.client(world.ada)
    client.post("/memories", data={"text": "I typed this by mistake"}, headers=HX)
    memory = world.runtime.service.list(world.ada.place).items[0]
    answer = client.post(f"/memories/{memory.id}/undo", headers=HX)
    assert answer.status_code == 200
    assert "Undone: the memory is gone." in toast_of(answer.get_data(as_text=True))
    assert row_ids(answer) == []  # the row the Undo button targets is swapped for nothing
    assert world.texts(world.ada) == []


def test_nothing_to_undo_keeps_the_row(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    client = world.client(world.ada)
    client.post(f"/memories/{memory.id}", data={"text": "I live in York", "revision": "1"}, headers=HX)
    client.post(f"/memories/{memory.id}/undo", headers=HX)
    again = client.post(f"/memories/{memory.id}/undo", headers=HX)
    assert again.status_code == 200
    assert "There is nothing to undo." in toast_of(again.get_data(as_text=True))
    # The Undo button swaps its target row for the answer: the row must come back, not vanish.
    assert row_ids(again) == [memory.id] and "I live in Leeds" in page_text(again)
    plain = client.post(f"/memories/{memory.id}/undo")
    assert plain.status_code == 303 and "There is nothing to undo." in page_text(client.get("/memories"))


# ---------------------------------------------------------------- forget, pin, history


def test_forget_htmx(world: World) -> None:
    memory = world.remember(world.ada, "I fear spiders")
    keep = world.remember(world.ada, "I like owls")
    client = world.client(world.ada)
    answer = client.post(f"/memories/{memory.id}/forget", headers=HX)
    assert answer.status_code == 200
    assert row_ids(answer) == []  # "closest li" is swapped for nothing: the row disappears
    assert "Forgotten, with every earlier version." in toast_of(answer.get_data(as_text=True))
    assert row_ids(client.get("/memories")) == [keep.id]
    assert client.get(f"/memories/{memory.id}/history").status_code == 404
    assert client.post(f"/memories/{memory.id}/forget", headers=HX).status_code == 404


def test_forget_without_javascript_asks_first_then_forgets(world: World) -> None:
    memory = world.remember(world.ada, "I fear spiders")
    client = world.client(world.ada)
    asked = client.post(f"/memories/{memory.id}/forget")  # a plain form: no hx-confirm ran
    assert asked.status_code == 200
    text = page_text(asked)
    assert "Forget this memory for good, with every earlier version?" in text and "I fear spiders" in text
    assert world.texts(world.ada) == ["I fear spiders"]  # nothing forgotten yet
    html = asked.get_data(as_text=True)
    assert f'action="/memories/{memory.id}/forget"' in html and 'name="confirmed" value="1"' in html
    assert 'href="/memories#m-' + memory.id + '"' in html  # cancel goes back to the memory
    answer = client.post(f"/memories/{memory.id}/forget", data={"confirmed": "1"})
    assert answer.status_code == 303
    page = client.get("/memories")
    assert "Forgotten, with every earlier version." in page_text(page) and row_ids(page) == []
    assert world.texts(world.ada) == []
    # asking about a memory that is not there (any more, or someone else's) is a 404, not a page
    assert client.post(f"/memories/{memory.id}/forget").status_code == 404


def test_asking_to_delete_the_account_without_javascript_asks_first(world: World) -> None:
    client = world.client(world.ada)
    asked = client.post("/account/delete")
    assert asked.status_code == 200
    assert "Ask support to delete your account and everything kept about you?" in page_text(asked)
    erasures = world.runtime.records.erasures
    assert erasures.all(None) == []  # nothing asked yet
    sent = client.post("/account/delete", data={"confirmed": "1"})
    assert sent.status_code == 303
    assert [r.subject_user_id for r in erasures.all(None)] == [world.ada.id]
    assert "Your request to delete your account was sent." in page_text(client.get("/memories"))


def test_forget_asks_for_confirmation_first(world: World) -> None:
    memory = world.remember(world.ada, "I fear spiders")
    html = world.client(world.ada).get("/memories").get_data(as_text=True)
    button = re.search(rf'<button[^>]*hx-post="/memories/{memory.id}/forget"[^>]*>', html)
    assert button and 'hx-confirm="Forget this memory for good, with every earlier version?"' in button.group(0)


def test_pin_and_unpin(world: World) -> None:
    memory = world.remember(world.ada, "I am vegetarian")
    client = world.client(world.ada)
    pinned = client.post(f"/memories/{memory.id}/pin", data={"pinned": "1"}, headers=HX)
    assert pinned.status_code == 200
    assert row_ids(pinned) == [memory.id] and "Pinned" in page_text(pinned) and ">Unpin<" in pinned.get_data(as_text=True)
    assert "Pinned: first in the assistant's picture of you." in toast_of(pinned.get_data(as_text=True))
    assert world.memory(world.ada, memory.id).pinned
    assert world.memory(world.ada, memory.id).revision == 1  # pinning is no new wording
    unpinned = client.post(f"/memories/{memory.id}/pin", data={"pinned": "0"})
    assert unpinned.status_code == 303
    assert not world.memory(world.ada, memory.id).pinned
    assert "Unpinned." in page_text(client.get("/memories"))


def test_history_lists_every_revision_newest_first(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    client = world.client(world.ada)
    client.post(f"/memories/{memory.id}", data={"text": "I live in York", "revision": "1"})
    client.post(f"/memories/{memory.id}", data={"text": "I live in Bath", "kind": "event", "revision": "2"})
    answer = client.get(f"/memories/{memory.id}/history")
    assert answer.status_code == 200
    revisions = re.findall(r'<li data-testid="revision"[^>]*>(.*?)</li>', answer.get_data(as_text=True), flags=re.S)
    texts = [" ".join(re.sub(r"<[^>]+>", " ", r).split()) for r in revisions]
    assert len(texts) == 3
    assert texts[0].startswith("I live in Bath Revision 3 Event") and texts[0].endswith("current")
    assert texts[1].startswith("I live in York Revision 2 Fact") and "current" not in texts[1]
    assert texts[2].startswith("I live in Leeds Revision 1 Fact")
