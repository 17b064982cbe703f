"""What the portal and the admin console say about the AI switch is true (issue 27, item 1; DESIGN
§6): every sentence they render about it is checked against what the API and the portal then do.

The switch off means: nothing is sent to an AI model (no embedding, no consolidation, no model
tools); every privacy operation and a host's explicit writes keep working; recall finds by words.
A sentence added to the banner, the pause card or the admin console without a check here fails
`test_*_says_only_what_is_checked`, and a check that stops holding fails its own test.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import httpx
import numpy as np
import pytest
from flask.testing import FlaskClient

from portal.client import MemoryClient, Refused
from portal.domain.people import PERMISSIONS

from .conftest import HX, PASSWORD, World, sign_in


class CountingEmbedder:
    """Our Embedder protocol, faked: a vector per text from its words, and a count of calls."""

    model_id = "fake-words-8"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        self.calls += 1
        vectors = np.full((len(texts), 8), 0.1, dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                vectors[row, sum(word.encode()) % 7] += 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), self.model_id


class CountingLLM:
    """Our LLM protocol, faked: it would learn one fact, and counts how often it is asked."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, system: str, prompt: str) -> str:
        self.calls += 1
        return '{"facts": [{"text": "Keeps bees", "kind": "fact"}], "corrections": [], "summary": "bees"}'


@pytest.fixture
def world_embedder() -> CountingEmbedder:
    return CountingEmbedder()


@dataclass
class Scene:
    """The world with the AI switched off for its tenant: Ada in the portal, an app with a key."""

    world: World
    portal: FlaskClient
    api: MemoryClient
    embedder: CountingEmbedder
    llm: CountingLLM
    token: str

    @property
    def owner(self) -> str:
        return self.world.ada.place.owner_id

    def models_asked(self) -> tuple[int, int]:
        return self.embedder.calls, self.llm.calls


@pytest.fixture
def scene(world: World, world_embedder: CountingEmbedder) -> Iterator[Scene]:
    llm = CountingLLM()
    world.runtime.service.llm = llm
    _, token = world.runtime.api_keys.create(world.tenant_id, PERMISSIONS, name="Host app")
    app = world.app()
    with MemoryClient("http://portal.test", token, transport=httpx.WSGITransport(app=app)) as api:
        api.remember(world.ada.place.owner_id, "Trains for the Lyon marathon")  # while the AI is on
        assert world.runtime.tenants.set_ai(world.tenant_id, False)
        yield Scene(world, world.client(world.ada), api, world_embedder, llm, token)


# ------------------------------------------------------------------------------ the checks


def nothing_is_sent_to_a_model(s: Scene) -> None:
    before = s.models_asked()
    saved = s.api.remember(s.owner, "Keeps bees on the roof").memory
    s.api.update(s.owner, saved.id, text="Keeps bees on the old roof")
    s.api.recall(s.owner, "bees")
    assert s.portal.post("/memories", data={"text": "Sings in a choir"}).status_code == 303
    with pytest.raises(Refused):
        s.api.consolidate(s.owner, [{"role": "user", "text": "I keep bees"}], "conv-bees")
    s.api.call_tool(s.owner, "remember", {"text": "Keeps bees"})
    assert s.models_asked() == before
    assert not s.api.get(s.owner, saved.id).has_vector


def no_learning_from_conversations(s: Scene) -> None:
    count = len(s.api.list(s.owner).items)
    with pytest.raises(Refused) as refused:
        s.api.consolidate(s.owner, "I keep bees on the roof.", "conv-now")
    assert (refused.value.status, refused.value.code) == (422, "ai_disabled")
    later = s.world.app().test_client().post(  # in the background: refused as well, no job queued
        f"/api/v1/people/{s.owner}/consolidate", json={"transcript": "I keep bees.", "ref": "conv-later", "wait": False},
        headers={"Authorization": f"Bearer {s.token}"})
    assert (later.status_code, later.get_json()["code"]) == (422, "ai_disabled")
    assert len(s.api.list(s.owner).items) == count and s.llm.calls == 0


def the_model_tools_are_off(s: Scene) -> None:
    kept = s.api.list(s.owner).items[0]
    for name, arguments in (("remember", {"text": "Keeps bees"}), ("recall", {"query": "marathon"}),
                            ("update_memory", {"id": kept.id, "text": "Trains for the Paris marathon"}),
                            ("forget", {"id": kept.id})):
        answer = s.api.call_tool(s.owner, name, arguments)
        assert (answer["ok"], answer["reason"]) == (False, "ai_disabled"), name
    assert s.api.get(s.owner, kept.id).text == kept.text


def apps_still_save_and_find_by_words(s: Scene) -> None:
    saved = s.api.remember(s.owner, "Keeps bees on the allotment")
    assert not saved.memory.has_vector
    hits = s.api.recall(s.owner, "allotment bees")
    assert [(h.memory.id, h.match) for h in hits] == [(saved.memory.id, "lexical")]


def the_person_keeps_every_control(s: Scene) -> None:
    kept = s.api.remember(s.owner, "Grows tomatoes").memory
    assert s.portal.get("/memories").status_code == 200
    assert s.portal.post(f"/memories/{kept.id}", data={"text": "Grows cherry tomatoes", "revision": "1"}).status_code == 303
    assert s.api.get(s.owner, kept.id).text == "Grows cherry tomatoes"
    assert s.portal.post("/account/pause").status_code == 303 and s.api.get_settings(s.owner) is True
    assert s.portal.post("/account/resume").status_code == 303 and s.api.get_settings(s.owner) is False
    assert "Grows cherry tomatoes" in s.portal.get("/account/export.json").get_data(as_text=True)
    assert s.portal.post(f"/memories/{kept.id}/forget", headers=HX).status_code == 200
    assert kept.id not in [m.id for m in s.api.list(s.owner).items]
    assert s.portal.post("/account/erase", data={"confirm": s.world.ada.email}).status_code == 303
    assert s.api.list(s.owner).items == []


def pausing_stops_apps_saving(s: Scene) -> None:
    assert s.portal.post("/account/pause").status_code == 303
    with pytest.raises(Refused) as refused:
        s.api.remember(s.owner, "Keeps bees")
    assert refused.value.code == "paused"
    assert s.world.runtime.tenants.set_ai(s.world.tenant_id, True)  # and once the AI is back
    assert s.api.call_tool(s.owner, "remember", {"text": "Keeps bees"})["reason"] == "paused"
    assert s.api.consolidate(s.owner, "I keep bees.", "conv-back").status == "paused"
    assert "Keeps bees" not in [m.text for m in s.api.list(s.owner).items]


def reindex_gives_vectors_later(s: Scene) -> None:
    saved = s.api.remember(s.owner, "Keeps bees on the roof").memory
    assert not saved.has_vector
    assert s.world.runtime.tenants.set_ai(s.world.tenant_id, True)
    assert s.world.runtime.service.reindex() >= 1
    assert s.api.get(s.owner, saved.id).has_vector


Check = Callable[[Scene], None]

BANNER: dict[str, Check] = {
    "The assistant's AI is switched off for your organisation: nothing about you is sent to an AI model, and the "
    "assistant learns nothing from your conversations.": nothing_is_sent_to_a_model,
    "Its memory tools are off: it cannot save, correct, search or forget your memories by itself.":
        the_model_tools_are_off,
    "Apps of your organisation can still save memories about you and find them by their words.":
        apps_still_save_and_find_by_words,
    "You can still see, correct, pause, erase and download everything it keeps about you.":
        the_person_keeps_every_control,
}
PAUSE_CARD: dict[str, Check] = {
    "While the AI is off, the assistant learns nothing from your conversations, but apps can still save memories "
    "about you.": no_learning_from_conversations,
    "Pause memory to stop that too, now and once the AI is back.": pausing_stops_apps_saving,
}
ADMIN: dict[str, Check] = {
    "With a tenant's AI switched off, nothing is sent to an AI model: memories are saved without a vector and "
    "recalled by their words, and consolidation and the model tools refuse, saying the AI is switched off.":
        nothing_is_sent_to_a_model,
    "Apps can still save, correct and erase memories, and people keep every control over theirs.":
        the_person_keeps_every_control,
    "Once the AI is back on, memory-portal reindex gives a vector to the memories saved meanwhile.":
        reindex_gives_vectors_later,
}
EVERY_CHECK = list(dict.fromkeys([*BANNER.values(), *PAUSE_CARD.values(), *ADMIN.values()]))


def said(page: str, testid: str) -> str:
    """The text of the element carrying `testid`, as a person reads it."""
    found = re.search(rf'<(\w+)[^>]*data-testid="{testid}"[^>]*>(.*?)</\1>', page, flags=re.S)
    assert found, f"no {testid} on the page"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(2))).split())


def admin_client(world: World) -> FlaskClient:
    world.runtime.accounts.create("root@example.com", "Root", world.tenant_id, "admin", PASSWORD)
    client = world.client()
    sign_in(client, "root@example.com")
    return client


def test_the_banner_says_only_what_is_checked(scene: Scene) -> None:
    page = scene.portal.get("/memories").get_data(as_text=True)
    assert said(page, "ai-off") == " ".join(BANNER)
    assert "learns nothing while" not in page  # the old sentence, which a host's write proved false


def test_the_pause_card_says_only_what_is_checked_and_offers_the_pause(scene: Scene) -> None:
    page = scene.portal.get("/memories").get_data(as_text=True)
    assert said(page, "pause-said") == " ".join(PAUSE_CARD)
    assert re.search(r'<form[^>]*action="/account/pause"', page), "no way to pause while the AI is off"


def test_the_admin_console_says_only_what_is_checked(scene: Scene) -> None:
    page = admin_client(scene.world).get("/admin/").get_data(as_text=True)
    assert said(page, "ai-switch-said") == " ".join(ADMIN)


@pytest.mark.parametrize("check", EVERY_CHECK, ids=lambda c: c.__name__)
def test_each_sentence_holds(scene: Scene, check: Check) -> None:
    check(scene)


def test_in_french_too(scene: Scene) -> None:
    page = scene.world.client(scene.world.bob).get("/memories").get_data(as_text=True)
    assert said(page, "ai-off").startswith("L'IA de l'assistant est désactivée pour votre organisation : rien ")
    assert said(page, "pause-said").startswith("Tant que l'IA est désactivée, ")
    assert "Mettre en pause la mémoire" in page


def test_with_the_ai_on_none_of_it_is_said(world: World) -> None:
    page = world.client(world.ada).get("/memories").get_data(as_text=True)
    assert 'data-testid="ai-off"' not in page and 'data-testid="pause-said"' not in page


def test_resuming_with_the_ai_off_says_what_comes_back(scene: Scene) -> None:
    assert scene.portal.post("/account/pause").status_code == 303
    answer = scene.portal.post("/account/resume", headers=HX).get_data(as_text=True)
    assert "Resumed: apps may save memories about you again." in answer and "may learn again" not in answer
    assert scene.api.remember(scene.owner, "Keeps bees").memory.text == "Keeps bees"  # what comes back, and only that
    assert scene.api.call_tool(scene.owner, "remember", {"text": "Sings"})["reason"] == "ai_disabled"
