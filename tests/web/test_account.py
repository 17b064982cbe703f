"""The person's controls over the whole of their memory: pause and resume, erase everything,
download it all (JSON and CSV), and the language the portal speaks to them."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta

from babel.dates import format_date

from portal.domain.types import Source

from .conftest import HX, World, page_text, row_ids


def test_pause_and_resume_htmx_answer_the_pause_panel(world: World) -> None:
    client = world.client(world.ada)
    paused = client.post("/account/pause", headers=HX)
    assert paused.status_code == 200
    html = paused.get_data(as_text=True)
    assert html.lstrip().startswith('<section id="pause-panel" class="card pause is-paused"')
    assert "Resume memory" in page_text(paused) and "Pause memory" not in page_text(paused)
    assert 'hx-swap-oob="innerHTML"' in html and "Paused: the assistant learns nothing new until you resume." in page_text(paused)
    assert world.runtime.service.is_paused(world.ada.place)

    resumed = client.post("/account/resume", headers=HX)
    assert resumed.status_code == 200
    assert resumed.get_data(as_text=True).lstrip().startswith('<section id="pause-panel" class="card pause"')
    assert "Pause memory" in page_text(resumed) and "Resumed: the assistant may learn again." in page_text(resumed)
    assert not world.runtime.service.is_paused(world.ada.place)


def test_pause_plain_and_what_it_means(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    client = world.client(world.ada)
    answer = client.post("/account/pause")
    assert answer.status_code == 303 and answer.headers["Location"] == "/memories"
    page = client.get("/memories")
    assert "Learning is paused: the assistant keeps nothing new about you." in page_text(page)
    assert "Paused: the assistant learns nothing new until you resume." in page_text(page)
    # Nothing new is kept, but the person can still correct and see what is there.
    refused = client.post("/memories", data={"text": "I like plums"}, headers=HX)
    assert refused.status_code == 422
    assert "Memory is paused: nothing is learnt or changed until you resume it." in page_text(refused)
    assert client.post(f"/memories/{memory.id}", data={"text": "I live in Hull", "revision": "1"}).status_code == 303
    assert world.texts(world.ada) == ["I live in Hull"]
    assert client.post("/account/resume").status_code == 303
    assert "The assistant may learn from your conversations." in page_text(client.get("/memories"))


def test_erase_everything_needs_the_exact_email(world: World) -> None:
    world.remember(world.ada, "I live in Leeds")
    world.remember(world.ada, "I like plums")
    bobs = world.remember(world.bob, "J'aime les prunes")
    client = world.client(world.ada)
    form = client.get("/account/erase")
    assert form.status_code == 200 and "Type your e-mail address to confirm" in page_text(form)
    # how much goes, and the download offered first
    assert "All 2 memories the assistant keeps about you will be erased" in page_text(form)
    html = form.get_data(as_text=True)
    assert html.index('href="/account/export.json"') < html.index('name="confirm"')

    for wrong in ("", "yes", "bob@example.com", "ada@example"):
        answer = client.post("/account/erase", data={"confirm": wrong})
        assert answer.status_code == 422, wrong
        assert "Type your e-mail address exactly to confirm." in page_text(answer)
    assert len(world.texts(world.ada)) == 2

    answer = client.post("/account/erase", data={"confirm": "  Ada@Example.com "})
    assert answer.status_code == 303 and answer.headers["Location"] == "/memories"
    page = client.get("/memories")
    assert "Everything was erased: 2 memories, with every earlier version." in page_text(page)
    assert row_ids(page) == [] and world.texts(world.ada) == []
    assert world.memory(world.bob, bobs.id).text == "J'aime les prunes"  # nobody else's memory


def test_erase_message_in_french_uses_the_singular(world: World) -> None:
    world.remember(world.bob, "J'aime les prunes")
    client = world.client(world.bob)
    assert client.post("/account/erase", data={"confirm": "bob@example.com"}).status_code == 303
    page = client.get("/memories")
    assert "Tout a été effacé : 1 souvenir, avec toutes ses versions antérieures." in page_text(page)
    assert "effacé\u00a0:" in page.get_data(as_text=True)  # French spacing: no line break before the colon


def test_export_json_is_a_download_of_everything_mine(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds")
    world.runtime.service.update(world.ada.place, memory.id, text="I live in York")
    world.remember(world.bob, "J'habite à Nantes")
    client = world.client(world.ada)
    client.post("/account/pause")
    answer = client.get("/account/export.json")
    assert answer.status_code == 200 and answer.mimetype == "application/json"
    assert answer.headers["Content-Disposition"] == 'attachment; filename="my-memories.json"'
    data = json.loads(answer.get_data(as_text=True))
    assert data["owner_id"] == world.ada.owner_id and data["settings"] == {"paused": True, "learnt_days": None}
    assert [m["text"] for m in data["memories"]] == ["I live in York"]
    assert [r["text"] for r in data["memories"][0]["revisions"]] == ["I live in Leeds"]  # the earlier wording
    assert "Nantes" not in answer.get_data(as_text=True)


def test_export_csv_neutralises_formulas(world: World) -> None:
    world.remember(world.ada, "I live in Leeds", kind="fact")
    world.remember(world.ada, "=HYPERLINK(\"http://evil.example\",\"click\")")
    world.remember(world.ada, "@SUM(1+1)*cmd")
    world.remember(world.ada, "+33 is my country code")
    answer = world.client(world.ada).get("/account/export.csv")
    assert answer.status_code == 200 and answer.mimetype == "text/csv"
    assert answer.headers["Content-Disposition"] == 'attachment; filename="my-memories.csv"'
    rows = list(csv.DictReader(io.StringIO(answer.get_data(as_text=True))))
    texts = {r["text"] for r in rows}
    assert texts == {
        "I live in Leeds", "'=HYPERLINK(\"http://evil.example\",\"click\")", "'@SUM(1+1)*cmd", "'+33 is my country code"
    }
    assert all(not r[field].startswith(("=", "+", "-", "@")) for r in rows for field in r)
    assert {r["kind"] for r in rows} == {"fact"} and rows[0]["memory_id"]


def test_one_versioned_export_format_for_the_person_with_the_csv_as_its_view(world: World) -> None:
    """The JSON the person downloads is the documented document (format, version, account); the
    CSV is a view of it with a row per wording, true/false booleans and the sources."""
    memory = world.remember(world.ada, "I live in Leeds", kind="fact")
    world.runtime.service.update(world.ada.place, memory.id, text="I live in York")
    world.runtime.service.pin(world.ada.place, memory.id)
    cello = world.remember(world.ada, "I play the cello", kind="fact", sources=(Source("consolidation", "conv-7"),))
    client = world.client(world.ada)
    doc = json.loads(client.get("/account/export.json").get_data(as_text=True))
    assert (doc["format"], doc["version"]) == ("memory-portal/export", 1)
    assert doc["account"] == {"email": "ada@example.com", "name": "Ada Lovelace", "language": "en",
                              "created_at": world.ada.created_at.isoformat()}
    assert {m["text"] for m in doc["memories"]} == {"I live in York", "I play the cello"}
    rows = list(csv.DictReader(io.StringIO(client.get("/account/export.csv").get_data(as_text=True))))
    york = [r for r in rows if r["memory_id"] == memory.id]
    # a row per wording, the current one first (the pin is a revision of its own)
    assert [(r["current"], r["text"]) for r in york][:1] == [("true", "I live in York")]
    assert {r["text"] for r in york} == {"I live in York", "I live in Leeds"}
    assert len(york) == len(world.runtime.service.history(world.ada.place, memory.id))
    assert {r["pinned"] for r in york} == {"true"} and {r["pinned"] for r in rows if r["memory_id"] != memory.id} == {"false"}
    assert all(r["current"] in ("true", "false") for r in rows) and "True" not in {r["pinned"] for r in rows}
    assert [r["sources"] for r in rows if r["memory_id"] == cello.id] == ["consolidation:conv-7"]


def test_downloads_work_with_the_ai_off(world: World) -> None:
    world.remember(world.ada, "I live in Leeds")
    world.runtime.tenants.set_ai(world.tenant_id, False)
    client = world.client(world.ada)
    assert "I live in Leeds" in client.get("/account/export.json").get_data(as_text=True)
    assert "I live in Leeds" in client.get("/account/export.csv").get_data(as_text=True)


def test_switch_language(world: World) -> None:
    world.remember(world.ada, "I live in Leeds")
    client = world.client(world.ada)
    english = client.get("/memories", headers={"Accept-Language": "fr"})  # the account's choice wins
    assert '<html lang="en">' in english.get_data(as_text=True) and "Erase everything" in page_text(english)

    answer = client.post("/account/language", data={"language": "fr"}, headers={"Referer": "http://localhost/account/erase"})
    assert answer.status_code == 303 and answer.headers["Location"] == "http://localhost/account/erase"
    french = client.get("/memories")
    html = french.get_data(as_text=True)
    assert '<html lang="fr">' in html
    text = page_text(french)
    for words in ("Ce dont votre assistant se souvient à votre sujet", "Tout effacer", "Télécharger mes données",
                  "Mettre en pause la mémoire", "Oublier", "Épingler", "Modifier", "Détails", "Enregistré par une application"):
        assert words in text, words
    assert re.search(r'value="fr" lang="fr" aria-pressed="true"', html)  # the switch shows the language chosen
    assert world.runtime.accounts.get(world.ada.id).language == "fr"  # type: ignore[union-attr]


def test_language_switch_ignores_unknown_languages_and_refuses_other_sites(world: World) -> None:
    client = world.client(world.ada)
    answer = client.post("/account/language", data={"language": "de"})
    assert answer.status_code == 303 and answer.headers["Location"] == "/memories"
    assert world.runtime.accounts.get(world.ada.id).language == "en"  # type: ignore[union-attr]
    # A POST sent from another site is refused, whatever it asks (portal.web.security).
    foreign = client.post("/account/language", data={"language": "fr"}, headers={"Referer": "https://evil.example/"})
    assert foreign.status_code == 403 and "came from another site" in page_text(foreign)
    assert world.runtime.accounts.get(world.ada.id).language == "en"  # type: ignore[union-attr]
    assert "Erase everything" in page_text(client.get("/memories"))


def test_french_account_reads_french_from_the_start(world: World) -> None:
    world.remember(world.bob, "J'habite à Nantes", kind="fact")
    page = world.client(world.bob).get("/memories", headers={"Accept-Language": "en"})
    text = page_text(page)
    assert "J'habite à Nantes Fait Importance 3/5" in text
    assert "Reprendre la mémoire" not in text and "Mettre en pause la mémoire" in text
    paused = world.client(world.bob).post("/account/pause", headers=HX)
    assert "Reprendre la mémoire" in page_text(paused)


def test_a_request_to_delete_my_account_shows_on_my_pages_until_it_is_done(world: World) -> None:
    """Issue 27: after "Ask to delete my account" the portal said nothing more about it."""
    client = world.client(world.ada)
    assert "Ask to delete my account" in page_text(client.get("/memories"))
    assert client.post("/account/delete", data={"confirmed": "1"}).status_code == 303
    [asked] = world.runtime.support.erasures.all(None)
    received, due = asked.received_at, asked.received_at + timedelta(days=30)  # a month to answer
    for path in ("/memories", "/account/apps", "/account/import", "/account/erase"):
        text = page_text(client.get(path))
        assert (f"You asked to delete your account on {format_date(received, 'long', locale='en')}. "
                f"Support will do it by {format_date(due, 'long', locale='en')}.") in text, path
    assert "Ask to delete my account" not in page_text(client.get("/memories"))  # asked already
    assert "Ask to delete my account" in page_text(world.client(world.chloe).get("/memories"))  # hers only

    bob = world.client(world.bob)  # French
    assert bob.post("/account/delete", data={"confirmed": "1"}).status_code == 303
    [asked] = world.runtime.support.erasures.open_for(world.bob.owner_id, world.tenant_id)
    received, due = asked.received_at, asked.received_at + timedelta(days=30)
    text = page_text(bob.get("/memories"))
    assert (f"Vous avez demandé la suppression de votre compte le {format_date(received, 'long', locale='fr')}. "
            f"Le support l'effectuera au plus tard le {format_date(due, 'long', locale='fr')}.") in text
