"""The portal's Import preview lets the person decide (issue 27, item 7): each line shows the kind
it will get ("Likes tea" a preference), which they may change, and a box they may untick to leave
it out, all in a plain form (no JavaScript); a line that means what a kept memory says is listed as
kept already, with that memory's words; and the list then shows the memories in the file's order."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.fakes.embedders import HashEmbedder

from .conftest import HX, World, page_text
from .test_import import sealed, upload

FILE = "- Likes tea\n- Wants to learn Japanese\n- Has a cat called Miso\n- Loves green tea\n- Feels tired on Mondays\n"


@pytest.fixture
def world_embedder() -> Any:
    return HashEmbedder(synonyms={"loves": "likes"})


def lines_of(preview: Any) -> list[tuple[str, str, str, bool]]:
    """Each line offered: (its place, its text, the kind selected, ticked)."""
    html = preview.get_data(as_text=True)
    found = []
    for item in re.findall(r'<li data-testid="import-line">(.*?)</li>', html, flags=re.S):
        index = re.search(r'name="take" value="(\d+)"', item)
        text = re.search(r'<span id="text-\d+">(.*?)</span>', item, flags=re.S)
        kind = re.search(r'<option value="([a-z]+)" selected>', item)
        assert index and text and kind, item
        found.append((index.group(1), text.group(1).strip(), kind.group(1), " checked" in item))
    return found


@pytest.mark.parametrize("headers", [{}, HX], ids=["plain", "htmx"])
def test_the_preview_guesses_kinds_and_the_person_changes_them_and_leaves_lines_out(world: World,
                                                                                  headers: dict[str, str]) -> None:
    world.remember(world.ada, "Likes green tea", kind="preference")
    client = world.client(world.ada)
    preview = upload(client, FILE.encode())
    assert preview.status_code == 200
    assert lines_of(preview) == [("0", "Likes tea", "preference", True), ("1", "Wants to learn Japanese", "goal", True),
                                 ("2", "Has a cat called Miso", "fact", True),
                                 ("4", "Feels tired on Mondays", "feeling", True)]
    text = page_text(preview)
    assert "4 memories will be added. 1 is kept already" in text
    assert "Loves green tea (kept as “Likes green tea”)" in text  # the same meaning as a kept memory
    assert "first telling word" in text and "untick a memory to leave it out" in text

    # Without JavaScript: the form as posted, "Has a cat" made an event, "Feels tired" unticked.
    form = {"content": sealed(preview), "confirmed": "1", "take": ["0", "1", "2"],
            "kind-0": "preference", "kind-1": "goal", "kind-2": "event", "kind-4": "feeling"}
    added = client.post("/account/import", data=form, headers=headers)
    assert added.status_code == 303
    page = client.get("/memories")
    assert "3 memories imported." in page_text(page)
    memories = [(m.text, m.kind) for m in world.runtime.service.list(world.ada.place, limit=10).items]
    assert memories == [("Likes tea", "preference"), ("Wants to learn Japanese", "goal"), ("Has a cat called Miso", "event"),
                        ("Likes green tea", "preference")]
    shown = re.findall(r'<p class="memory-text" id="t-[^"]+">(.*?)</p>', page.get_data(as_text=True))
    assert [s.strip() for s in shown][:3] == ["Likes tea", "Wants to learn Japanese", "Has a cat called Miso"]


def test_forged_choices_change_nothing_but_what_the_person_may_choose(world: World) -> None:
    client = world.client(world.ada)
    preview = upload(client, b"Likes tea\nWorks night shifts\n")
    form = {"content": sealed(preview), "confirmed": "1", "take": ["0", "1", "-1", "x", "99999", "٣"],
            "kind-0": "k" * 80, "kind-1": "person", "kind-x": "goal", "kind-٣": "goal", "kind-99999": "goal", "kind-": ""}
    assert client.post("/account/import", data=form).status_code == 303
    kept = sorted((m.text, m.kind) for m in world.runtime.service.list(world.ada.place).items)
    assert kept == [("Likes tea", "fact"), ("Works night shifts", "person")]  # an unknown kind: the default, as any write


def test_a_french_preview_says_it_in_french(world: World) -> None:
    preview = upload(world.client(world.bob), b"J'aime les prunes\nVeut apprendre le piano\n")
    assert [(text, kind) for _, text, kind, _ in lines_of(preview)] == [("J&#39;aime les prunes", "preference"),
                                                                         ("Veut apprendre le piano", "goal")]
    text = page_text(preview)
    assert "Ajouter les souvenirs cochés" in text and "décochez" in text


def test_the_largest_file_the_page_takes_comes_back_with_every_choice_under_the_request_limit(world: World) -> None:
    """600 KB in 5,000 lines: the confirming form (the file in base64 and two fields per line, as a
    browser sends them) stays under the app's 1 MB limit, and every line is kept."""
    line = "Likes the number {:04d} " + "x" * 99
    raw = "".join(line.format(n) + "\n" for n in range(5000)).encode()
    assert 590 * 1024 < len(raw) <= 600 * 1024
    client = world.client(world.ada)
    preview = upload(client, raw)
    assert preview.status_code == 200 and "5000 memories will be added." in page_text(preview)
    lines = [str(n) for n in range(5000)]
    form: dict[str, Any] = {"content": sealed(preview), "confirmed": "1", "take": lines,
                            **{f"kind-{n}": "preference" for n in range(5000)}}
    added = client.post("/account/import", data=form)
    assert added.status_code == 303, added.status_code
    assert world.runtime.service.count(world.ada.place) == 5000
