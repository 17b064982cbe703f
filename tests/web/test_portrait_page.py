"""The person sees the assistant's picture of them (issue 27, item 3): the page shows exactly what
the service gives the assistant as the portrait, what it leaves out, and how a memory gets in;
linked from the memories page, a plain GET (no JavaScript), in English and French."""

from __future__ import annotations

import html
import re

from portal.domain.types import Memory

from .conftest import World, page_text

PAGE = "/portrait"


def items(page: str, testid: str) -> list[str]:
    """The texts of the list items carrying `testid`, top to bottom."""
    found = re.findall(rf'<li[^>]*data-testid="{testid}"[^>]*>.*?<p class="memory-text"[^>]*>(.*?)</p>', page, flags=re.S)
    return [html.unescape(t).strip() for t in found]


def test_the_page_shows_what_the_assistant_is_given(world: World) -> None:
    useful = world.remember(world.ada, "Trains for the Lyon marathon")  # importance 3: not in it
    important = world.remember(world.ada, "Is allergic to peanuts", importance=5)
    pinned = world.remember(world.ada, "Prefers short answers", importance=2)
    world.runtime.service.pin(world.ada.place, pinned.id, True)
    answer = world.client(world.ada).get(PAGE)
    assert answer.status_code == 200
    page, text = answer.get_data(as_text=True), page_text(answer)
    given = world.runtime.service.portrait(world.ada.place, masked=True)
    assert items(page, "in-portrait") == [m.text for m in given.memories] == [pinned.text, important.text]
    shown = re.search(r'<pre[^>]*data-testid="portrait-text"[^>]*>(.*?)</pre>', page, flags=re.S)
    assert shown and html.unescape(shown.group(1)) == given.text  # word for word
    assert "The assistant finds your 1 other memory only by searching, when a conversation touches it." in text
    assert useful.text not in items(page, "in-portrait")
    assert "Pin it on your memories page: pinned memories come first." in text
    assert "Or give it importance 4 or more when you edit it." in text
    assert f'href="/memories#m-{pinned.id}"' in page


def test_an_empty_picture_of_someone_with_memories_says_why(world: World) -> None:
    world.remember(world.ada, "Trains for the Lyon marathon", importance=3)
    text = page_text(world.client(world.ada).get(PAGE))
    assert "Nothing is in the picture yet: none of your memories is pinned or has importance 4 or more." in text
    assert "The assistant finds your 1 other memory only by searching, when a conversation touches it." in text
    assert "keeps nothing about you" not in text


def test_with_nothing_kept_it_says_so(world: World) -> None:
    text = page_text(world.client(world.ada).get(PAGE))
    assert "The assistant keeps nothing about you yet." in text
    assert "other memor" not in text


def test_what_did_not_fit_is_named(world: World) -> None:
    long = [world.remember(world.ada, f"Pinned memory number {n} " + "with many words " * 25, importance=5)
            for n in range(5)]
    page = world.client(world.ada).get(PAGE).get_data(as_text=True)
    given = world.runtime.service.portrait(world.ada.place)
    assert given.no_room and len(given.memories) + len(given.no_room) == len(long)
    assert items(page, "no-room") == [m.text for m in given.no_room]
    assert "No room left for these" in page


def test_it_is_linked_from_the_memories_page_and_needs_a_sign_in(world: World) -> None:
    page = world.client(world.ada).get("/memories").get_data(as_text=True)
    assert re.search(rf'<a[^>]*href="{PAGE}"[^>]*>The assistant\'s picture of you</a>', page)
    assert world.client().get(PAGE).status_code in (302, 303)


def test_in_french(world: World) -> None:
    memory: Memory = world.remember(world.bob, "Aime le thé vert", importance=4)
    text = page_text(world.client(world.bob).get(PAGE))
    assert "Le portrait que l'assistant se fait de vous" in text and memory.text in text
    assert "Épinglez-le" in text
