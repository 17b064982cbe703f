"""Another person's memory is "not found" on every memory route, read or write, plain or htmx, and
stays exactly as it was. The answer is the same as for an id that never existed: nothing tells
whether the memory exists."""

from __future__ import annotations

import re

import pytest
from flask import Flask

from .conftest import HX, PASSWORD, World

CSRF_TOKEN = re.compile(r'(?<="X-CSRFToken": ")[^"]+|(?<=name="csrf_token" value=")[^"]+')

# What each memory route is sent besides the id (a real browser's form data).
FORM = {
    "memories.save": {"text": "Overwritten by someone else", "revision": "1", "kind": "goal", "importance": "5"},
    "memories.pin": {"pinned": "1"},
    "decisions.use": {"use": "0"},
    "decisions.expiry": {"after": "day"},
}


def memory_routes(app: Flask) -> list[tuple[str, str, str]]:
    """(endpoint, method, rule) of every route that takes a memory id: new routes are covered too."""
    found = []
    for rule in app.url_map.iter_rules():
        if "memory_id" in rule.arguments and not rule.endpoint.startswith(("api.", "mem0.")):
            for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
                found.append((rule.endpoint, method, rule.rule))
    return found


def test_the_routes_under_test_are_all_the_memory_routes(world: World) -> None:
    endpoints = {endpoint for endpoint, _, _ in memory_routes(world.app())}
    assert endpoints >= {
        "memories.row", "memories.edit", "memories.save", "memories.undo", "memories.forget", "memories.pin",
        "memories.history",
    }


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_someone_elses_memory_is_404_everywhere(world: World, htmx: bool) -> None:
    other_tenant = world.runtime.tenants.create("Beta")
    # Same owner id as Ada, another tenant: a different place, so still someone else's memories.
    twin = world.runtime.accounts.create("ada@beta.example", "Ada Twin", other_tenant.id, "member", PASSWORD,
                                         owner_id=world.ada.owner_id)
    bobs = world.remember(world.bob, "Je suis allergique aux noix")
    world.runtime.service.update(world.bob.place, bobs.id, text="Je suis allergique aux noix de cajou")
    twins = world.remember(twin, "I keep a diary")
    mine = world.remember(world.ada, "I like walnuts")

    app = world.app()
    client = app.test_client()
    client.post("/login", data={"email": "ada@example.com", "password": PASSWORD})
    headers = HX if htmx else {}
    for endpoint, method, rule in memory_routes(app):
        answers = {}
        for label, memory_id in (("bob", bobs.id), ("twin", twins.id), ("never", "0" * 32)):
            path = rule.replace("<memory_id>", memory_id)
            answer = client.open(path, method=method, data=FORM.get(endpoint, {}), headers=headers)
            assert answer.status_code == 404, (endpoint, method, label, answer.status_code)
            answers[label] = answer.get_data(as_text=True)
        # The same page, byte for byte, but for the CSRF token: it carries the second it was made.
        assert len({CSRF_TOKEN.sub("<token>", page) for page in answers.values()}) == 1, endpoint
        assert "Je suis allergique" not in answers["bob"] and "diary" not in answers["twin"]

    after = world.memory(world.bob, bobs.id)
    assert (after.text, after.revision, after.pinned, after.kind) == ("Je suis allergique aux noix de cajou", 2, False, bobs.kind)
    assert [r.text for r in world.runtime.service.history(world.bob.place, bobs.id)] == [
        "Je suis allergique aux noix de cajou", "Je suis allergique aux noix"
    ]
    assert world.memory(twin, twins.id).text == "I keep a diary"
    # Ada's own memory was never touched by any of this, and her list shows only hers.
    assert world.memory(world.ada, mine.id).text == "I like walnuts"
    assert world.texts(world.ada) == ["I like walnuts"]
    page = client.get("/memories").get_data(as_text=True)
    assert bobs.id not in page and twins.id not in page
    for words in ("allergique noix", "diary"):
        found = client.get("/memories", query_string={"q": words}).get_data(as_text=True)
        assert "Nothing matches." in found and bobs.id not in found and twins.id not in found
