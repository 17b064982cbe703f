"""The portal's Import (issue 18, portability): a file is previewed (what will be added, what is
kept already, what is refused and why) before anything is kept, added on confirmation in one
audited transaction, and taken back whole with one Undo."""

from __future__ import annotations

import io
import json
import re

from flask.testing import FlaskClient
from werkzeug.test import EnvironBuilder, TestResponse

from .conftest import World, page_text, row_ids


def upload(client: FlaskClient, content: bytes, name: str = "memories.txt") -> TestResponse:
    # The request is built here and closed after: a large body is spooled to a temporary file.
    builder = EnvironBuilder(path="/account/import", method="POST", data={"file": (io.BytesIO(content), name)},
                             content_type="multipart/form-data")
    environ = builder.get_environ()
    try:
        return client.open(environ)
    finally:
        environ["wsgi.input"].close()
        builder.close()


def test_preview_then_add_then_undo_the_whole_import(world: World) -> None:
    world.remember(world.ada, "I play the cello")
    client = world.client(world.ada)
    assert "Import memories" in page_text(client.get("/memories"))
    form = client.get("/account/import")
    assert form.status_code == 200 and 'enctype="multipart/form-data"' in form.get_data(as_text=True)

    lines = "- I play the cello\n- I am vegetarian\n- I work night shifts\n- I met Chloé for lunch\n"
    preview = upload(client, lines.encode())
    assert preview.status_code == 200
    text = page_text(preview)
    assert "2 memories will be added." in text and "1 is kept already" in text
    assert "I am vegetarian" in text and "This is about someone else" in text  # Chloé is another account's name
    assert len(world.texts(world.ada)) == 1  # a preview keeps nothing
    content = re.search(r'name="content" value="([^"]+)"', preview.get_data(as_text=True))
    assert content

    added = client.post("/account/import", data={"content": content.group(1), "confirmed": "1"})
    assert added.status_code == 303
    page = client.get("/memories")
    assert "2 memories imported." in page_text(page)
    assert sorted(world.texts(world.ada)) == ["I am vegetarian", "I play the cello", "I work night shifts"]
    undo = re.search(r'action="(/account/import/[0-9a-f]+/undo)"', page.get_data(as_text=True))
    assert undo
    again = client.post("/account/import", data={"content": content.group(1), "confirmed": "1"})
    again_page = client.get("/memories")  # idempotent, and said so: no "0 memories imported." with an Undo
    assert again.status_code == 303 and "No memory imported: the file holds nothing new." in page_text(again_page)
    assert "0 memories imported" not in page_text(again_page) and "/undo" not in again_page.get_data(as_text=True)

    assert client.post(undo.group(1)).status_code == 303
    assert "2 imported memories taken back." in page_text(client.get("/memories"))
    assert world.texts(world.ada) == ["I play the cello"]
    actions = [e.action for e in world.runtime.records.audit.query(None, subject=world.ada.owner_id)]
    assert {"person.imported", "person.import_undone"} <= set(actions)


def test_our_own_export_comes_back_through_the_portal(world: World) -> None:
    memory = world.remember(world.ada, "I live in Leeds", kind="fact")
    world.runtime.service.pin(world.ada.place, memory.id)
    client = world.client(world.ada)
    exported = client.get("/account/export.json").get_data()
    world.runtime.service.forget_all(world.ada.place)
    preview = upload(client, exported, "my-memories.json")
    content = re.search(r'name="content" value="([^"]+)"', preview.get_data(as_text=True))
    assert content and "1 memory will be added." in page_text(preview)
    client.post("/account/import", data={"content": content.group(1), "confirmed": "1"})
    [back] = world.runtime.service.list(world.ada.place).items
    assert (back.text, back.kind, back.pinned) == ("I live in Leeds", "fact", True)


def test_a_file_that_cannot_be_imported_says_why_and_keeps_nothing(world: World) -> None:
    client = world.client(world.ada)
    for content, reason in ((b'{"nothing": 1}', "cannot be read"), (b"\n\n", "holds no memory"),
                            (b"x\n" * 400_000, "too large to import here")):
        answer = upload(client, content)
        assert answer.status_code == 422 and reason in page_text(answer), reason
    assert client.post("/account/import", data={"content": "not base64!", "confirmed": "1"}).status_code == 422
    assert client.post("/account/import", data={}).status_code == 422
    assert world.texts(world.ada) == []
    # someone else's import cannot be undone from here: nothing of theirs is touched
    bob = world.client(world.bob)
    bob_preview = upload(bob, b"J'aime les prunes\n")
    bob.post("/account/import", data={"content": re.search(r'name="content" value="([^"]+)"',
                                                            bob_preview.get_data(as_text=True)).group(1),  # type: ignore[union-attr]
                                      "confirmed": "1"})
    batch = next(s.ref for m in world.runtime.service.list(world.bob.place).items for s in m.sources if s.kind == "import")
    assert client.post(f"/account/import/{batch}/undo").status_code == 303
    assert world.texts(world.bob) == ["J'aime les prunes"]
    assert row_ids(client.get("/memories")) == []


def sealed(preview: TestResponse) -> str:
    """The file a preview carries to its confirmation."""
    content = re.search(r'name="content" value="([^"]+)"', preview.get_data(as_text=True))
    assert content, page_text(preview)
    return content.group(1)


def forged_export(first_batch: str) -> bytes:
    """An export no portal wrote: earlier wordings no write would keep, one revision number twice,
    a kind of 80 letters, an importance off the scale, and a source naming another import."""
    return json.dumps({"format": "memory-portal/export", "version": 1, "memories": [{
        "text": "I keep bees", "kind": "fact", "revision": 4, "sources": [{"kind": "import", "ref": first_batch}],
        "revisions": [
            {"revision": 3, "text": "Chloé has a penicillin allergy", "kind": "fact"},
            {"revision": 2, "text": "I keep wasps", "kind": "k" * 80, "importance": 999999},
            {"revision": 2, "text": "I keep ants", "kind": "fact"},
            {"revision": 1, "text": "I keep moths", "kind": "fact", "sources": [{"kind": "import", "ref": first_batch}]},
        ],
    }]}).encode()


def test_a_forged_export_keeps_only_what_a_write_would_keep(any_world: World) -> None:
    world = any_world
    client = world.client(world.ada)
    first = upload(client, b"I play the cello\n")
    assert client.post("/account/import", data={"content": sealed(first), "confirmed": "1"}).status_code == 303
    undo_first = re.search(r'action="/account/import/([0-9a-f]+)/undo"', client.get("/memories").get_data(as_text=True))
    assert undo_first

    preview = upload(client, forged_export(undo_first.group(1)), "forged.json")
    assert preview.status_code == 200
    assert "1 memory will be added." in page_text(preview)
    assert "2 earlier wordings will be left out: they could not be kept as they are." in page_text(preview)
    assert "Chloé" not in page_text(preview)
    added = client.post("/account/import", data={"content": sealed(preview), "confirmed": "1"})
    assert added.status_code == 303 and "1 memory imported." in page_text(client.get("/memories"))

    [bees] = [m for m in world.runtime.service.list(world.ada.place).items if m.text == "I keep bees"]
    history = [(r.revision, r.text, r.kind, r.importance) for r in world.runtime.service.history(world.ada.place, bees.id)]
    assert history == [(4, "I keep bees", "fact", 3), (2, "I keep wasps", "fact", 5), (1, "I keep moths", "fact", 3)]
    assert [s.kind for s in bees.sources] == ["import"] and bees.sources[0].ref != undo_first.group(1)
    # Undoing the first import takes back its own memory, never the one whose file named it.
    assert client.post(f"/account/import/{undo_first.group(1)}/undo").status_code == 303
    assert "1 imported memory taken back." in page_text(client.get("/memories"))
    assert world.texts(world.ada) == ["I keep bees"]


def test_french_preview_counts_the_earlier_wordings_left_out(world: World) -> None:
    client = world.client(world.bob)
    preview = upload(client, forged_export("0" * 32), "forged.json")
    assert "2 formulations antérieures seront laissées de côté" in page_text(preview)


def test_a_line_the_file_repeats_is_said_once_as_a_repeat_not_as_kept_already(world: World) -> None:
    """Issue 38, item 10: a line the file holds twice is a duplicate within the file. It was shown
    under "To add" and again under "Kept already", though nothing held it: now it is said once, as
    a repeat in the file, and the file's line the person keeps already stays "kept already"."""
    world.remember(world.ada, "I play the cello")
    client = world.client(world.ada)
    lines = "- I keep bees\n- I play the cello\n- I keep bees\n- I play the cello\n- I work night shifts\n"
    preview = upload(client, lines.encode())
    text, html = page_text(preview), preview.get_data(as_text=True)
    assert "2 memories will be added." in text and "1 is kept already and stays as it is." in text
    assert "2 lines repeat a line above them in the file and are left out." in text
    held = re.search(r'data-testid="import-held">(.*?)</ul>', html, re.S)
    assert held and re.findall(r"<li>([^<]*)</li>", held.group(1)) == ["I play the cello"]
    assert text.count("I keep bees") == 1  # under "To add" only
    content = re.search(r'name="content" value="([^"]+)"', html)
    assert content
    assert client.post("/account/import", data={"content": content.group(1), "confirmed": "1"}).status_code == 303
    assert sorted(world.texts(world.ada)) == ["I keep bees", "I play the cello", "I work night shifts"]
    french = upload(world.client(world.bob), b"- J'ai un chat\n- J'ai un chat\n")
    assert "1 ligne répète une ligne plus haut dans le fichier et est laissée de côté." in page_text(french)
