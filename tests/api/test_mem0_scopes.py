"""mem0's own Python client (2.2.1) on what an add is and becomes (issue 39, items 1, 2, 3 and 8),
on SQLite and PostgreSQL: an agent, app or run id is part of what a memory is (the same words under
another run are another memory, and a delete scoped to a run erases that run's only); a direct
import (`infer=False`) keeps what it is given and never replaces; an add the model learns from
tells, in its event, what it made (or why it failed); `async_mode=False` waits for it."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.queue import Worker
from portal.domain.types import Place

from ..fakes.embedders import HashEmbedder
from ..fakes.llm_server import FakeLLMServer, Reply
from .conftest import World, serving
from .test_consolidate import facts

os.environ.setdefault("MEM0_TELEMETRY", "False")  # mem0 sends usage to PostHog unless told not to

mem0 = pytest.importorskip("mem0", reason="mem0ai is in the test extra")
from mem0 import MemoryClient  # noqa: E402

from .test_mem0_client import mem0_home, model  # noqa: E402, F401 - the same fake model and mem0 home


def _served(request: pytest.FixtureRequest, make_world: Callable[..., World], llm: Any) -> Iterator[tuple[World, str]]:
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    # "1" and "2" mean the same here, as for a real model "Fact 1: I own 1 bikes." and "Fact 2: I own 2
    # bikes." are near duplicates
    world = make_world(engine, embedder=HashEmbedder(synonyms={"1": "n", "2": "n"}), llm=llm)
    world.runtime.service.ctx.options = replace(world.runtime.service.options, job_retry_seconds=0.2,
                                                job_wait_seconds=1.0)
    with serving(world) as url:
        yield world, url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, make_world: Callable[..., World],
           model: FakeLLMServer) -> Iterator[tuple[World, str]]:  # noqa: F811
    model.replies.clear()
    yield from _served(request, make_world, OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def no_model(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> Iterator[tuple[World, str]]:
    yield from _served(request, make_world, None)


@pytest.fixture
def worker(served: tuple[World, str]) -> Iterator[None]:
    running = Worker(served[0].runtime.queue, workers=1).start()
    try:
        yield
    finally:
        running.stop()


def client(url: str, world: World) -> Any:
    return MemoryClient(api_key=world.keys["a"], host=url)


def texts(memory: Any, **where: str) -> list[str]:
    return sorted(m["memory"] for m in memory.get_all(filters={"user_id": "ada", **where})["results"])


def event_of(memory: Any, event_id: str, settled: bool = True) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        event = memory.client.get(f"/v1/event/{event_id}/").json()  # no client method reads events
        if not settled or event["status"] in ("SUCCEEDED", "FAILED") or time.monotonic() > deadline:
            return event
        time.sleep(0.1)


# ---------------------------------------------------------------------------------------- item 1


def test_the_same_words_under_another_run_are_another_memory(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    first = memory.add("Likes green tea", user_id="ada", run_id="run-A", infer=False)["results"][0]
    second = memory.add("Likes green tea", user_id="ada", run_id="run-B", infer=False)["results"][0]
    assert (first["event"], second["event"]) == ("ADD", "ADD") and first["id"] != second["id"]
    assert texts(memory, run_id="run-B") == ["Likes green tea"]
    agent = memory.add("Likes green tea", user_id="ada", agent_id="tea-bot", infer=False)["results"][0]
    assert agent["event"] == "ADD" and texts(memory, agent_id="tea-bot") == ["Likes green tea"]
    again = memory.add("Likes green tea", user_id="ada", run_id="run-A", infer=False)["results"][0]
    assert (again["event"], again["id"]) == ("NONE", first["id"])  # the same words in the same run: said again

    assert "1 memories" in memory.delete_all(user_id="ada", run_id="run-A")["message"]
    assert texts(memory, run_id="run-B") == ["Likes green tea"] and texts(memory, run_id="run-A") == []
    assert world.count("ada") == 2


def test_a_person_s_own_memories_still_meet_their_repeats(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    memory.add("Likes green tea", user_id="ada", run_id="run-A", infer=False)
    own = memory.add("Likes green tea", user_id="ada", infer=False)["results"][0]
    assert own["event"] == "ADD"  # not run-A's: a memory of no run is another one
    assert memory.add("likes GREEN tea", user_id="ada", infer=False)["results"][0] == {**own, "event": "NONE"}
    assert world.count("ada") == 2


def test_what_the_model_learns_in_one_run_corrects_nothing_of_another(served: tuple[World, str], worker: None,
                                                                       model: FakeLLMServer) -> None:  # noqa: F811
    world, url = served
    memory = client(url, world)
    model.script(Reply(facts("Has a cat called Miso")), Reply(facts("Has a cat called Miso")))
    for run in ("run-A", "run-B"):
        queued = memory.add("I adopted a cat called Miso.", user_id="ada", run_id=run)
        assert event_of(memory, queued["event_id"])["status"] == "SUCCEEDED"
    assert texts(memory, run_id="run-A") == texts(memory, run_id="run-B") == ["Has a cat called Miso"]
    assert "Has a cat called Miso" not in model.prompts()[-1]  # run-A's memory was not shown


# ---------------------------------------------------------------------------------------- item 2


def test_a_direct_import_keeps_what_it_is_given(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    one = memory.add("Fact 1: I own 1 bikes.", user_id="ada", infer=False)["results"]
    two = memory.add("Fact 2: I own 2 bikes.", user_id="ada", infer=False)["results"]
    assert [r["event"] for r in one + two] == ["ADD", "ADD"] and one[0]["id"] != two[0]["id"]
    assert texts(memory) == ["Fact 1: I own 1 bikes.", "Fact 2: I own 2 bikes."]
    turns = memory.add([{"role": "user", "content": "I own 3 bikes."},
                        {"role": "assistant", "content": "Three bikes, noted."}], user_id="ada", infer=False)
    assert [(r["memory"], r["event"]) for r in turns["results"]] == [("I own 3 bikes.", "ADD"),
                                                                     ("Three bikes, noted.", "ADD")]
    assert world.count("ada") == 4


# ---------------------------------------------------------------------------------------- items 3 and 8


def test_learning_with_no_model_fails_and_says_why(no_model: tuple[World, str]) -> None:
    world, url = no_model
    memory = client(url, world)
    queued = memory.add("I adopted a cat called Miso.", user_id="ada")
    assert queued["status"] == "PENDING"
    running = Worker(world.runtime.queue, workers=1).start()
    try:
        event = event_of(memory, queued["event_id"])
    finally:
        running.stop()
    assert (event["status"], event["code"], event["results"]) == ("FAILED", "unavailable", [])
    assert "No model is set up" in event["error"]
    assert world.count("ada") == 0


def test_the_event_lists_the_memories_made_and_never_one_forgotten_since(served: tuple[World, str], worker: None,
                                                                        model: FakeLLMServer) -> None:  # noqa: F811
    world, url = served
    memory = client(url, world)
    kept = memory.add("Lives in Lyon", user_id="ada", infer=False)["results"][0]
    model.script(Reply(facts("Has a cat called Miso", "Lives in Lyon")))
    queued = memory.add("I adopted a cat called Miso. I live in Lyon.", user_id="ada")
    event = event_of(memory, queued["event_id"])
    made = {r["memory"]: r for r in event["results"]}
    assert event["status"] == "SUCCEEDED" and set(made) == {"Has a cat called Miso", "Lives in Lyon"}
    # the kept memory, met: the model's importance for it (4) is its correction
    assert made["Lives in Lyon"]["id"] == kept["id"] and made["Lives in Lyon"]["event"] == "UPDATE"
    cat = made["Has a cat called Miso"]
    assert cat["event"] == "ADD" and memory.get(cat["id"])["memory"] == "Has a cat called Miso"
    memory.delete(cat["id"])
    assert [r["id"] for r in event_of(memory, queued["event_id"])["results"]] == [kept["id"]]
    with world.runtime.store.read(Place("ada", world.tenant_a)) as tx:
        job = tx.get_job(queued["event_id"])
    assert job is not None and "Miso" not in repr(job.result)  # ids and events only, never the words


def test_an_add_not_in_async_mode_waits_for_what_the_model_made(served: tuple[World, str], worker: None,
                                                                model: FakeLLMServer) -> None:  # noqa: F811
    world, url = served
    memory = client(url, world)
    model.script(Reply(facts("Has a cat called Miso")))
    answer = memory.add("I adopted a cat called Miso.", user_id="ada", async_mode=False)
    assert answer["status"] == "SUCCEEDED" and answer["event_id"]
    assert [(r["memory"], r["event"]) for r in answer["results"]] == [("Has a cat called Miso", "ADD")]


def test_an_add_not_in_async_mode_answers_pending_once_the_wait_is_over(served: tuple[World, str],
                                                                        model: FakeLLMServer) -> None:  # noqa: F811
    world, url = served  # no worker: nothing learns it within the wait (1 s here)
    memory = client(url, world)
    started = time.monotonic()
    answer = memory.add("I adopted a cat called Miso.", user_id="ada", async_mode=False)
    assert answer["status"] == "PENDING" and answer["event_id"] and 1.0 <= time.monotonic() - started < 5


def test_with_no_queue_an_add_is_learnt_at_once_and_answers_what_it_made(served: tuple[World, str],
                                                                          model: FakeLLMServer) -> None:  # noqa: F811
    world, url = served
    world.runtime.service.queue = None  # a service built without a background queue learns at once
    memory = client(url, world)
    model.script(Reply(facts("Has a cat called Miso")))
    answer = memory.add("I adopted a cat called Miso.", user_id="ada")
    assert answer["status"] == "SUCCEEDED" and [r["memory"] for r in answer["results"]] == ["Has a cat called Miso"]
    world.runtime.service.ctx.llm = None
    failed = memory.add("I adopted a dog called Rex.", user_id="ada")
    assert (failed["status"], failed["code"], failed["results"]) == ("FAILED", "unavailable", [])


# ---------------------------------------------------------------------------------------- immutable (item 4)


@pytest.mark.parametrize("immutable", [True, False])
def test_an_immutable_memory_is_never_corrected_by_what_is_learnt_later(
    served: tuple[World, str], worker: None, model: FakeLLMServer, immutable: bool,  # noqa: F811
) -> None:
    world, url = served
    memory = client(url, world)
    kept = memory.add("Owns 1 bike", user_id="ada", infer=False, immutable=immutable)["results"][0]
    assert memory.get(kept["id"])["immutable"] is immutable
    correction = {"facts": [], "corrections": [{"id": kept["id"], "text": "Owns 2 bikes"}], "summary": "bikes"}
    model.script(Reply(json.dumps(correction)))
    queued = memory.add("I own 2 bikes now.", user_id="ada")
    assert event_of(memory, queued["event_id"])["status"] == "SUCCEEDED"
    assert memory.get(kept["id"])["memory"] == ("Owns 1 bike" if immutable else "Owns 2 bikes")
    assert (kept["id"] in model.prompts()[-1]) is not immutable  # never shown to the model to correct
    memory.update(kept["id"], text="Owns 3 bikes")  # an explicit correction still applies
    assert memory.get(kept["id"])["memory"] == "Owns 3 bikes"
