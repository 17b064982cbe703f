"""Who wrote a memory, as its row says it (issue 38, item 5): the person in the portal, an app by
its name (through the API, the model's tools, MCP or mem0's routes: the app's recorded use says
which), the person's own import, the operator's import, or the assistant's inference. Memories an
app stored through the API, or the operator imported, were labelled "You said it". And the
Connected apps page says what an app did, from its recorded uses, not what it may do."""

from __future__ import annotations

import io
import json
import re
from html import unescape

import pytest

from portal.domain.apps import app_of
from portal.domain.audit import AuditNote
from portal.domain.imports import parse
from portal.domain.types import Source
from portal.services.tools import run_tool

from .conftest import HX, World, page_text

EN = {"portal": "You wrote it", "api": "Saved by Support bot", "tool": "Saved by Claude Desktop",
      "own import": "You imported it", "operator": "Imported by your organisation",
      "learnt": "The assistant learnt it", "unknown app": "Saved by an app"}
FR = {"portal": "Vous l'avez écrit", "api": "Enregistré par Support bot", "tool": "Enregistré par Claude Desktop",
      "own import": "Vous l'avez importé", "operator": "Importé par votre organisation",
      "learnt": "Appris par l'assistant", "unknown app": "Enregistré par une application"}


def said_by(html: str) -> dict[str, str]:
    """Each row's text and who wrote it, as the row says."""
    rows = re.findall(r'<p class="memory-text" id="t-[^"]+">(.*?)</p>.*?data-testid="written-by">(.*?)</span>', html,
                      flags=re.S)
    return {unescape(text.strip()): unescape(" ".join(who.split())) for text, who in rows}


@pytest.mark.parametrize(("language", "words"), [("en", EN), ("fr", FR)])
@pytest.mark.parametrize("headers", [{}, HX], ids=["plain", "htmx"])
def test_each_row_says_who_wrote_it(world: World, language: str, words: dict[str, str],
                                    headers: dict[str, str]) -> None:
    who = world.ada if language == "en" else world.bob
    runtime = world.runtime
    bot, bot_token = runtime.api_keys.create(world.tenant_id, ("memories:write",), name="Support bot")
    desk, _token = runtime.api_keys.create(world.tenant_id, ("memories:read", "memories:write", "consolidate"),
                                           name="Claude Desktop")
    client = world.client(who)
    assert client.post("/memories", data={"text": "Typed in the portal"}).status_code == 303
    through_api = world.app().test_client().post(
        f"/api/v1/people/{who.owner_id}/memories", json={"text": "Sent through the API"},
        headers={"Authorization": f"Bearer {bot_token}"})
    assert through_api.status_code == 201, through_api.get_json()
    tool = run_tool(runtime.service.for_app(app_of(desk)), who.place, "remember", {"text": "Kept by the model's tool"})
    assert tool["ok"], tool
    runtime.service.remember(who.place, "Learnt from a conversation", origin="inferred", channel="background",
                             sources=(Source("consolidation", "conv-1"),))
    runtime.service.import_parsed(who.place, parse(b"- Brought in by the operator\n"),
                                  audit=AuditNote(None, "operator", "person.imported"))
    preview = client.post("/account/import", data={"file": (io.BytesIO(b"- Brought in by me\n"), "mine.txt")})
    content = re.search(r'name="content" value="([^"]+)"', preview.get_data(as_text=True))
    assert content and client.post("/account/import", data={"content": content.group(1), "confirmed": "1"}).status_code == 303
    world.remember(who, "Kept by an app whose keys are gone", sources=(Source("api"),))  # no recorded use

    shown = said_by(client.get("/memories", headers=headers).get_data(as_text=True))
    assert shown == {
        "Typed in the portal": words["portal"], "Sent through the API": words["api"],
        "Kept by the model's tool": words["tool"], "Learnt from a conversation": words["learnt"],
        "Brought in by the operator": words["operator"], "Brought in by me": words["own import"],
        "Kept by an app whose keys are gone": words["unknown app"],
    }
    assert "You said it" not in page_text(client.get("/memories"))


def test_a_search_and_a_changed_row_say_it_too(world: World) -> None:
    key, _token = world.runtime.api_keys.create(world.tenant_id, ("memories:write",), name="Support bot")
    memory = world.runtime.service.for_app(app_of(key)).remember(world.ada.place, "Plays the oboe").memory
    client = world.client(world.ada)
    assert said_by(client.get("/memories?q=oboe", headers=HX).get_data(as_text=True)) == {
        "Plays the oboe": "Saved by Support bot"}
    pinned = client.post(f"/memories/{memory.id}/pin", data={"pinned": "1"}, headers=HX)
    assert said_by(pinned.get_data(as_text=True)) == {"Plays the oboe": "Saved by Support bot"}


def test_connected_apps_say_what_an_app_did_not_what_it_may_do(world: World) -> None:
    """An app that recalled only, with a key that may also write and learn, "only reads": that is
    what it may not be. The page says what its uses show: it has only read so far."""
    world.remember(world.ada, "Prefers green tea")
    key, _token = world.runtime.api_keys.create(world.tenant_id, ("memories:read", "memories:write", "consolidate"),
                                                name="Claude Desktop")
    world.runtime.service.for_app(app_of(key)).recall(world.ada.place, "green tea")
    english = page_text(world.client(world.ada).get("/account/apps"))
    assert "Has only read your memories so far" in english and "Only reads your memories" not in english
    world.remember(world.bob, "Aime le thé vert")
    world.runtime.service.for_app(app_of(key)).recall(world.bob.place, "thé vert")
    french = page_text(world.client(world.bob).get("/account/apps"))
    assert "N'a fait que lire vos souvenirs jusqu'ici" in french and "Ne fait que lire" not in french


def test_a_file_cannot_pass_itself_off_as_the_operators_import_or_an_app(world: World) -> None:
    """The row's words come from what the import itself marks and the apps' recorded uses, never
    from what a file says about where a memory came from."""
    forged = {"format": "memory-portal/export", "version": 1, "memories": [
        {"text": "Claims the operator brought it", "kind": "fact", "sources": [{"kind": "import", "ref": "operator-x"}]},
        {"text": "Claims an app wrote it", "kind": "fact", "sources": [{"kind": "api", "ref": "Support bot"}]}]}
    client = world.client(world.ada)
    preview = client.post("/account/import", data={"file": (io.BytesIO(json.dumps(forged).encode()), "forged.json")})
    content = re.search(r'name="content" value="([^"]+)"', preview.get_data(as_text=True))
    assert content and client.post("/account/import", data={"content": content.group(1), "confirmed": "1"}).status_code == 303
    assert said_by(client.get("/memories").get_data(as_text=True)) == {
        "Claims the operator brought it": "You imported it", "Claims an app wrote it": "Saved by an app"}
