"""Consolidation through the API against a fake OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from portal.adapters.llm import OpenAICompatibleLLM
from portal.domain.decisions import conversation_key
from portal.domain.types import Place

from ..fakes.llm_server import FakeLLMServer, Reply
from .conftest import World

TRANSCRIPT = [
    {"role": "user", "text": "I just adopted a cat called Miso."},
    {"role": "assistant", "text": "Congratulations! How is Miso settling in?"},
    {"role": "user", "text": "Well. I am also training for a marathon in April."},
]


def facts(*texts: str, summary: str = "a chat") -> str:
    return json.dumps({"facts": [{"text": t, "kind": "fact", "importance": 4} for t in texts], "summary": summary})


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture
def server(shared_server: FakeLLMServer) -> FakeLLMServer:
    """The module's fake model, with no scripted replies and no recorded requests."""
    shared_server.replies.clear()
    shared_server.requests.clear()
    return shared_server


@pytest.fixture
def llm_world(make_world: Callable[..., World], server: FakeLLMServer, sqlite_engine: Any) -> World:
    return make_world(sqlite_engine, llm=OpenAICompatibleLLM(server.base_url, "m", retries=0, timeout=2.0))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_llm_world(request: pytest.FixtureRequest, make_world: Callable[..., World], server: FakeLLMServer) -> World:
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    return make_world(engine, llm=OpenAICompatibleLLM(server.base_url, "m", retries=0, timeout=2.0))


def test_consolidate_learns_in_the_background_once_per_ref(any_llm_world: World, server: FakeLLMServer) -> None:
    llm_world = any_llm_world
    server.script("Here you go:\n```json\n" + facts("Has a cat called Miso", "Is training for a marathon in April",
                                                    summary="New cat, marathon") + "\n```")
    with llm_world.client() as memory:
        result = memory.consolidate("ada", TRANSCRIPT, "conv-1", person_name="Ada", language="en")
        assert (result.status, result.added, result.corrected, result.refused) == ("done", 2, 0, 0)
        assert result.summary == "New cat, marathon"
        unseen = memory.unseen("ada")
        assert sorted(m.text for m in unseen) == ["Has a cat called Miso", "Is training for a marathon in April"]
        cat = next(m for m in unseen if "Miso" in m.text)
        assert (cat.origin, cat.channel, cat.seen, cat.importance) == ("inferred", "background", False, 4)
        # The conversation is kept by its key, never by the host's reference (issue 38, item 25).
        key = conversation_key("conv-1", llm_world.runtime.store.words_secret)
        assert (cat.sources[0].kind, cat.sources[0].ref) == ("consolidation", key)
        assert memory.consolidate("ada", TRANSCRIPT, "conv-1").status == "already"
        assert memory.mark_seen("ada", [m.id for m in unseen]) == 2 and memory.unseen("ada") == []
    assert len(server.requests) == 1


def test_a_string_transcript_and_refused_facts(llm_world: World, server: FakeLLMServer) -> None:
    server.script(facts("Has a cat called Miso", "Her password is hunter2", ""))
    with llm_world.client() as memory:
        result = memory.consolidate("ada", "User: I adopted a cat called Miso. My password is hunter2.", "conv-2")
    assert (result.status, result.added) == ("done", 1) and result.refused >= 1
    assert [m.text for m in llm_world.client().list("ada").items] == ["Has a cat called Miso"]


def test_the_model_is_shown_this_persons_memories_only(any_llm_world: World, server: FakeLLMServer) -> None:
    llm_world = any_llm_world
    with llm_world.client() as memory:
        memory.remember("ada", "Prefers green tea")
        memory.remember("bob", "Plays the tuba")
    with llm_world.client("b") as memory:
        memory.remember("ada", "Lives in Oslo")
    with llm_world.client() as memory:
        assert memory.consolidate("ada", TRANSCRIPT, "conv-3").status == "done"
    shown = server.prompts()[0]
    assert "Prefers green tea" in shown and "tuba" not in shown and "Oslo" not in shown


@pytest.mark.parametrize(("reply", "reason"), [(Reply(status=500), "model"), (Reply("Sorry, I cannot."), "unreadable")])
def test_a_failed_run_releases_the_ref_so_a_retry_learns(llm_world: World, server: FakeLLMServer, reply: Reply,
                                                         reason: str) -> None:
    server.script(reply, facts("Has a cat called Miso"))
    with llm_world.client() as memory:
        failed = memory.consolidate("ada", TRANSCRIPT, "conv-4")
        assert (failed.status, failed.reason, failed.added) == ("failed", reason, 0)
        retried = memory.consolidate("ada", TRANSCRIPT, "conv-4")
        assert (retried.status, retried.added) == ("done", 1)


def test_paused_learns_nothing_even_after_resume(llm_world: World, server: FakeLLMServer) -> None:
    with llm_world.client() as memory:
        memory.set_paused("ada", True)
        assert memory.consolidate("ada", TRANSCRIPT, "conv-5").status == "paused"
        llm_world.runtime.service.resume(Place("ada", llm_world.tenant_a))  # the person lifts it, in their portal
        assert memory.consolidate("ada", TRANSCRIPT, "conv-5").status == "already"
        assert memory.list("ada").items == []
    assert server.requests == []


def test_an_empty_conversation_asks_no_model(llm_world: World, server: FakeLLMServer) -> None:
    with llm_world.client() as memory:
        assert memory.consolidate("ada", "   ", "conv-6").status == "empty"
        assert memory.consolidate("ada", [], "conv-7").status == "empty"
    assert server.requests == []


def test_without_a_model_consolidate_is_unavailable(world: World) -> None:
    with world.client() as memory:
        result = memory.consolidate("ada", TRANSCRIPT, "conv-8")
    assert (result.status, result.added) == ("unavailable", 0)


@pytest.mark.parametrize(
    "body",
    [{"transcript": TRANSCRIPT}, {"transcript": TRANSCRIPT, "ref": ""}, {"transcript": 42, "ref": "c"},
     {"transcript": [{"role": "user"}], "ref": "c"}, {"transcript": [{"text": "x", "mood": "happy"}], "ref": "c"},
     {"transcript": TRANSCRIPT, "ref": "r" * 201}, {"transcript": [{"text": "x"}] * 5001, "ref": "c"}],
)
def test_consolidate_bodies_of_the_wrong_shape_are_400(world: World, body: Any) -> None:
    answer = world.raw().post("/api/v1/people/ada/consolidate", json=body, headers=world.auth())
    assert (answer.status_code, answer.json["code"]) == (400, "invalid_request")


def test_consolidate_needs_the_consolidate_permission(world: World) -> None:
    for key in ("a_read", "a_without:consolidate"):
        answer = world.raw().post("/api/v1/people/ada/consolidate", json={"transcript": "x", "ref": "c"},
                                  headers=world.auth(key))
        assert (answer.status_code, answer.json["code"]) == (403, "forbidden")
    answer = world.raw().post("/api/v1/people/ada/consolidate", json={"transcript": "x", "ref": "c"},
                              headers=world.auth("a_only:consolidate"))
    assert answer.status_code == 200
