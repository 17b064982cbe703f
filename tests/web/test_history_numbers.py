"""A memory's history is numbered by revision, as each entry says, and a revision no longer kept is
said in words where it would have been (issue 27, item 10): after edit, edit, undo the page shows
revisions 4 and 1, numbered 4 and 1, and says that an Undo took back revision 3 and that revision 4
is revision 2's wording again."""

from __future__ import annotations

import re

import pytest

from .conftest import HX, World, page_text


def entries(world: World, memory_id: str, who: str = "ada") -> list[tuple[int, str]]:
    """Each entry of the history: (the number the list shows, what the entry reads)."""
    answer = world.client(getattr(world, who)).get(f"/memories/{memory_id}/history")
    assert answer.status_code == 200
    found = re.findall(r'<li data-testid="revision" value="(\d+)">(.*?)</li>', answer.get_data(as_text=True), flags=re.S)
    return [(int(n), " ".join(re.sub(r"<[^>]+>", " ", body).split())) for n, body in found]


@pytest.mark.parametrize("headers", [{}, HX], ids=["plain", "htmx"])
def test_edit_edit_undo_is_numbered_by_revision_and_the_gap_is_said(world: World, headers: dict[str, str]) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    client = world.client(world.ada)
    client.post(f"/memories/{memory.id}", data={"text": "I live in York", "revision": "1"}, headers=headers)
    client.post(f"/memories/{memory.id}", data={"text": "I live in Bath", "revision": "2"}, headers=headers)
    assert client.post(f"/memories/{memory.id}/undo", headers=headers).status_code in (200, 303)

    shown = entries(world, memory.id)
    assert [n for n, _ in shown] == [4, 1]
    for number, text in shown:  # the list's number is the one the entry says
        assert f"Revision {number} " in text
    assert shown[0][1].startswith("I live in York Revision 4")
    assert "An Undo took back revision 3: this is the wording of revision 2 again." in shown[0][1]
    assert shown[1][1].startswith("I live in Leeds Revision 1") and "no longer kept" not in shown[1][1]


def test_every_gap_is_said_where_it_is(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    service = world.runtime.service
    for town in ("York", "Bath", "Hull"):
        service.update(world.ada.place, memory.id, text=f"I live in {town}")
    # Nothing missing: no sentence about it.
    assert [n for n, _ in entries(world, memory.id)] == [4, 3, 2, 1]
    assert all("no longer kept" not in text and "Undo took back" not in text for _, text in entries(world, memory.id))

    service.erase_history(world.ada.place, memory.id)
    [(number, text)] = entries(world, memory.id)
    assert number == 4 and "Revisions 1 to 3 are no longer kept: they were undone or erased." in text

    service.update(world.ada.place, memory.id, text="I live in Wells")
    service.update(world.ada.place, memory.id, text="I live in Ely", in_place=True)  # keeps no earlier text
    [(number, text)] = entries(world, memory.id)
    assert number == 6 and "Revisions 1 to 5 are no longer kept" in text

    other = world.remember(world.ada, "I play the oboe")
    service.update(world.ada.place, other.id, text="I play the flute")
    service.update(world.ada.place, other.id, text="I play the harp")
    service.undo(world.ada.place, other.id)
    service.update(world.ada.place, other.id, text="I play the drums")
    shown = entries(world, other.id)
    assert [n for n, _ in shown] == [5, 4, 1]
    assert "no longer kept" not in shown[0][1]
    assert "An Undo took back revision 3: this is the wording of revision 2 again." in shown[1][1]


def test_one_revision_missing_is_said_in_the_singular_and_in_french(world: World) -> None:
    memory = world.remember(world.bob, "J'habite à Lyon")
    service = world.runtime.service
    service.update(world.bob.place, memory.id, text="J'habite à Nice")
    with service.ctx.store.write(world.bob.place) as tx:  # revision 1 only goes (as retention would take it)
        assert tx.erase_history(memory.id) == 1
        tx.commit()
    service.update(world.bob.place, memory.id, text="J'habite à Paris")
    shown = entries(world, memory.id, "bob")
    assert [n for n, _ in shown] == [3, 2]
    assert "La version 1 n'est plus gardée : elle a été annulée ou effacée." in shown[1][1]
    text = page_text(world.client(world.bob).get(f"/memories/{memory.id}/history"))
    assert "Version 3" in text and "Version 2" in text
