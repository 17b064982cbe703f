"""mem0's own Python client (`mem0ai`, pinned in pyproject's test extra) pointed at this server
(issue 28): `MemoryClient(api_key=<our key>, host=<our server>)` end to end on SQLite and
PostgreSQL — ping at start, add as written and learnt by the model in the background, search,
pages of get_all, get, update, history, delete, users, delete_all and entity deletion — and the
exceptions it raises for a bad key, a key without the permission, another tenant's memory, a
blocked app and a paused person. No request here is written by hand: the client sends them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.queue import Worker
from portal.domain.apps import app_of
from portal.domain.types import Place

from ..fakes.embedders import HashEmbedder
from ..fakes.llm_server import FakeLLMServer, Reply
from .conftest import World, serving
from .test_consolidate import facts

os.environ.setdefault("MEM0_TELEMETRY", "False")  # mem0 sends usage to PostHog unless told not to

mem0 = pytest.importorskip("mem0", reason="mem0ai is in the test extra")
from mem0 import MemoryClient  # noqa: E402
from mem0.exceptions import AuthenticationError, MemoryNotFoundError, ValidationError  # noqa: E402


@pytest.fixture(scope="module")
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(autouse=True)
def mem0_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))  # where the client writes its config


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, make_world: Callable[..., World],
           model: FakeLLMServer) -> Iterator[tuple[World, str]]:
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    world = make_world(engine, embedder=HashEmbedder(),
                       llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0))
    world.runtime.service.ctx.options = replace(world.runtime.service.options, job_retry_seconds=0.2)
    with serving(world) as url:
        yield world, url


def client(url: str, world: World, key: str = "a") -> Any:
    return MemoryClient(api_key=world.keys[key], host=url)


def test_the_client_starts_keeps_finds_lists_corrects_and_forgets(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    assert memory.org_id == world.tenant_a  # the ping: the key's tenant, and its app as the project
    added = memory.add([{"role": "user", "content": "Prefers short answers"},
                        {"role": "assistant", "content": "Noted."},
                        {"role": "system", "content": "You are helpful."}], user_id="ada", infer=False)
    assert [(r["memory"], r["event"]) for r in added["results"]] == [("Prefers short answers", "ADD"), ("Noted.", "ADD")]
    for text in ("Likes green tea", "Lives in Lyon", "Has a cat called Miso"):
        memory.add(text, user_id="ada", infer=False)
    again = memory.add("Likes green tea", user_id="ada", infer=False)  # a duplicate reinforces, adds nothing
    assert again["results"][0]["event"] == "NONE"

    found = memory.search("green tea", filters={"user_id": "ada"}, top_k=2)["results"]
    assert found[0]["memory"] == "Likes green tea" and 0 <= found[0]["score"] <= 1 and len(found) <= 2
    assert found[0]["user_id"] == "ada" and found[0]["created_at"]
    assert memory.search("green tea", filters={"AND": [{"user_id": "ada"}]})["results"][0]["memory"] == "Likes green tea"

    first = memory.get_all(filters={"user_id": "ada"}, page=1, page_size=3)
    second = memory.get_all(filters={"user_id": "ada"}, page=2, page_size=3)
    assert first["count"] == 5 and len(first["results"]) == 3 and first["next"] and first["previous"] is None
    assert len(second["results"]) == 2 and second["next"] is None and second["previous"]
    listed = [m["memory"] for m in first["results"] + second["results"]]
    assert listed[0] == "Has a cat called Miso" and len(set(listed)) == 5  # newest first, each once

    tea = found[0]["id"]
    assert memory.get(tea)["memory"] == "Likes green tea"
    assert memory.update(tea, text="Likes jasmine tea")["memory"] == "Likes jasmine tea"
    events = memory.history(tea)
    assert [(e["event"], e["old_memory"], e["new_memory"]) for e in events] == [
        ("ADD", None, "Likes green tea"), ("UPDATE", "Likes green tea", "Likes jasmine tea")]
    assert memory.delete(tea)["message"]
    with pytest.raises(MemoryNotFoundError):
        memory.get(tea)
    with pytest.raises(MemoryNotFoundError):
        memory.history(tea)  # forgotten: no words left to show

    assert [(u["type"], u["name"]) for u in memory.users()["results"]] == [("user", "ada")]
    memory.add("Plays the cello", user_id="bob", infer=False)
    assert memory.delete_all(user_id="ada")["message"]
    assert world.count("ada") == 0 and world.count("bob") == 1
    memory.delete_users(user_id="bob")
    assert world.count("bob") == 0


def test_what_a_host_keeps_with_a_memory_comes_back_narrows_and_goes_with_it(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    kept = {"agent_id": "travel-bot", "run_id": "trip-7", "metadata": {"city": "Lyon", "stars": 4},
            "categories": ["travel", "food"], "expiration_date": "2031-05-01", "timestamp": 1767225600}
    tagged = memory.add("Wants a hotel near the old town", user_id="ada", infer=False, **kept)["results"][0]["id"]
    memory.add("Likes green tea", user_id="ada", infer=False)
    got = memory.get(tagged)
    assert {name: got[name] for name in kept} == kept and got["app_id"] is None
    by_agent = memory.get_all(filters={"AND": [{"user_id": "ada"}, {"agent_id": "travel-bot"}]})["results"]
    assert [m["id"] for m in by_agent] == [tagged]
    assert [m["id"] for m in memory.get_all(filters={"user_id": "ada", "categories": {"in": ["food"]}})["results"]] == [tagged]
    assert memory.get_all(filters={"user_id": "ada", "metadata": {"city": "Paris"}})["results"] == []
    found = memory.search("hotel", filters={"user_id": "ada", "run_id": "trip-7"})["results"]
    assert [h["id"] for h in found] == [tagged]
    changed = memory.update(tagged, metadata={"city": "Lyon", "stars": 5})
    assert changed["metadata"] == {"city": "Lyon", "stars": 5} and changed["memory"] == "Wants a hotel near the old town"
    assert memory.update(tagged, expiration_date=None)["expiration_date"] is None  # null takes it away
    assert [e["event"] for e in memory.history(tagged)] == ["ADD"]  # what is kept with it is not a wording
    # the person's download holds it; forgetting the agent's memories leaves the others
    exported = world.runtime.service.export(Place("ada", world.tenant_a))
    assert [m["attributes"]["agent_id"] for m in exported["memories"] if m["attributes"]] == ["travel-bot"]
    assert "1 memories" in memory.delete_all(user_id="ada", agent_id="travel-bot")["message"]
    assert [m["memory"] for m in memory.get_all(filters={"user_id": "ada"})["results"]] == ["Likes green tea"]
    with pytest.raises(AuthenticationError, match="erasure"):
        client(url, world, "a_without:erasure").delete_all(user_id="ada", agent_id="travel-bot")


def test_an_add_with_inference_is_learnt_in_the_background(served: tuple[World, str], model: FakeLLMServer) -> None:
    world, url = served
    model.replies.clear()
    model.script(Reply(facts("Has a cat called Miso")))
    memory = client(url, world)
    queued = memory.add([{"role": "user", "content": "I adopted a cat called Miso."}], user_id="ada",
                        agent_id="pet-bot", metadata={"source": "chat"})
    assert queued["status"] == "PENDING" and queued["event_id"]
    worker = Worker(world.runtime.queue, workers=1).start()
    try:
        import time

        deadline = time.monotonic() + 20
        while world.count("ada") == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        worker.stop()
    [learnt] = world.runtime.service.list(Place("ada", world.tenant_a)).items
    assert (learnt.text, learnt.attributes) == ("Has a cat called Miso", {"agent_id": "pet-bot", "metadata": {"source": "chat"}})
    event = memory.client.get(f"/v1/event/{queued['event_id']}/").json()  # no client method reads events
    assert event["status"] == "SUCCEEDED" and event["counts"]["added"] == 1 and "summary" not in event["counts"]


def test_the_client_raises_what_mem0_raises(served: tuple[World, str]) -> None:
    world, url = served
    with pytest.raises(ValueError, match="unknown or revoked key"):
        MemoryClient(api_key="mp_not_a_key", host=url)  # the client checks its key at start
    memory = client(url, world)
    ada = memory.add("Likes green tea", user_id="ada", infer=False)["results"][0]["id"]
    with pytest.raises(ValidationError, match="user_id"):
        memory.add("Likes tea", infer=False)  # a memory with no person
    with pytest.raises(ValidationError, match="structured_data_schema"):
        memory.add("Likes tea", user_id="ada", structured_data_schema={"type": "object"}, infer=False)  # refused, not dropped
    with pytest.raises(ValidationError, match="too large or malformed"):
        memory.add("Likes tea", user_id="ada", metadata={"notes": "x" * 3000}, infer=False)
    with pytest.raises(ValidationError, match="not supported"):
        memory.search("tea", filters={"AND": [{"user_id": "ada"}, {"keywords": "tea"}]})
    with pytest.raises(MemoryNotFoundError):
        client(url, world, "b").get(ada)  # another tenant's memory
    with pytest.raises(AuthenticationError, match="erasure"):
        client(url, world, "a_without:erasure").delete_all(user_id="ada")
    reader = client(url, world, "a_read")
    with pytest.raises(AuthenticationError, match="memories:write"):
        reader.add("Likes tea", user_id="ada", infer=False)

    bot = app_of(world.runtime.api_keys.verify(world.keys["a"]))
    place = Place("ada", world.tenant_a)
    world.runtime.service.pause(place)
    with pytest.raises(ValidationError, match="paused"):
        memory.add("Likes coffee", user_id="ada", infer=False)
    world.runtime.service.resume(place)
    world.runtime.service.set_app_control(place, bot.id, "blocked")
    with pytest.raises(AuthenticationError, match="blocked"):
        memory.search("tea", filters={"user_id": "ada"})
    with pytest.raises(AuthenticationError, match="blocked"):
        memory.get(ada)
    assert memory.users()["results"] == []  # a person who blocked the app is not listed to it
