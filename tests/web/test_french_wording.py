"""What the portal says in French, as a French speaker reads it (issue 38, item 15): a count of
nothing is said as nothing (« 0 souvenir … sera effacé » read as if one would go), a colon has its
no-break space before it on every French page and in every French text, and the API's
documentation, written in English, says so to the browser (`lang="en"`) inside a French page."""

from __future__ import annotations

import html as html_module
import io
import re

import pytest
from babel.messages.pofile import read_po

from portal.domain.catalog_fr import FR

from .conftest import HX, World, page_text
from .test_translations import po_path


@pytest.mark.parametrize(("language", "said"), [
    ("en", ("The assistant keeps no memory about you: there is nothing to erase.",
            "1 memory the assistant keeps about you will be erased, with every earlier version.",
            "All 2 memories the assistant keeps about you will be erased, with every earlier version.")),
    ("fr", ("L’assistant ne garde aucun souvenir sur vous : il n’y a rien à effacer.",
            "1 souvenir que l’assistant garde sur vous sera effacé, avec toutes ses versions antérieures.",
            "Les 2 souvenirs que l’assistant garde sur vous seront effacés, avec toutes leurs versions antérieures.")),
])
def test_erase_everything_says_nothing_one_and_many_properly(world: World, language: str, said: tuple[str, ...]) -> None:
    who = world.bob if language == "fr" else world.ada
    client = world.client(who)
    for count, sentence in enumerate(said):
        page = page_text(client.get("/account/erase"))
        assert sentence in page, (count, page)
        world.remember(who, ("I live in Leeds", "I like plums")[count] if count < 2 else "x")
    for other in ("0 memory", "0 souvenir", "0 memories"):
        assert other not in page_text(world.client(world.chloe).get("/account/erase"))


def test_erasing_nothing_says_there_was_nothing(world: World) -> None:
    client = world.client(world.bob)
    assert client.post("/account/erase", data={"confirm": "bob@example.com"}).status_code == 303
    text = page_text(client.get("/memories"))
    assert "Tout a été effacé : il n’y avait aucun souvenir à effacer." in text and "0 souvenir" not in text


def test_an_import_with_nothing_new_says_so(world: World) -> None:
    world.remember(world.bob, "J'ai un chat")
    client = world.client(world.bob)
    preview = client.post("/account/import", data={"file": (io.BytesIO(b"- J'ai un chat\n"), "m.txt")})
    text = page_text(preview)
    assert "Rien de nouveau à ajouter." in text and "1 est déjà gardé et reste tel quel." in text
    assert "0 souvenir" not in text
    fresh = page_text(client.post("/account/import", data={"file": (io.BytesIO(b"- J'ai un chien\n"), "m.txt")}))
    assert "1 souvenir sera ajouté." in fresh and "déjà gardé" not in fresh  # nothing held: not said at all


FRENCH_COLON = re.compile(r"(?<![\u00a0\d/]):(?!\d|//)")  # a colon without its no-break space (times, URLs aside)


def test_every_french_text_has_a_no_break_space_before_a_colon() -> None:
    with po_path("fr").open("rb") as handle:
        catalog = read_po(handle, locale="fr")
    texts = [s for m in catalog if m.id for s in (m.string if isinstance(m.string, tuple) else (m.string,))]
    for entry in FR.values():
        texts += list(entry.values()) if isinstance(entry, dict) else [entry]
    assert [t for t in texts if FRENCH_COLON.search(t)] == []


@pytest.mark.parametrize("headers", [{}, HX], ids=["plain", "htmx"])
def test_french_pages_put_a_no_break_space_before_every_colon(world: World, headers: dict[str, str]) -> None:
    memory = world.remember(world.bob, "J'habite à Lyon")
    client = world.client(world.bob)
    for path in ("/memories", f"/memories/{memory.id}/history", "/account/erase", "/account/import",
                 "/account/apps", "/memories/conversations", "/portrait", "/memories/forget-about"):
        html = client.get(path, headers=headers).get_data(as_text=True)
        text = html_module.unescape(re.sub(r"<[^>]+>", " ", html))  # a no-break space stays one
        text = re.sub(r"[ \t\r\n]+", " ", text)
        assert not re.search(r"[^\u00a0\d/]:(?!\d|//)", text), (path, re.findall(r".{30}[^\u00a0\d/]:.{10}", text))


def test_the_api_documentation_is_marked_english_in_a_french_page(world: World) -> None:
    html = world.client(world.bob).get("/api/v1/docs").get_data(as_text=True)
    assert '<html lang="fr">' in html  # the page around it speaks French (its header, its links)
    main = re.search(r'<main\b[^>]*>', html)
    english = re.search(r'<(\w+)[^>]*\blang="en"[^>]*>', html[main.end():] if main else "")
    assert english, "the documentation is not marked as English"
    assert "Send <code>Authorization" in html[html.index(english.group(0)):]
