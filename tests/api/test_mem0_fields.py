"""What mem0's integrations send beside the bare client's calls (issue 39, items 4, 5, 6 and 10),
through mem0's own Python client (mem0ai 2.2.1) against this server on SQLite and PostgreSQL: the
fields the platform takes (`limit`, `enable_graph`, `infer` on a read, `top_k` and `categories` on
a listing, `start_date`/`end_date`, `custom_*`, `includes`/`excludes`, `delete_linked`, ISO
timestamps), an OR of a person and their agent or run (LlamaIndex 1.0.0), and the endpoints this
server does not serve. The client sends each request; where 2.2.1 refuses a field on its own side
(top-level ids on a read), its own transport (`memory.client`, with its key) carries mem0's body,
as the 1.x client sends it. What the npm clients send is in test_mem0_npm_fields.py."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from portal.domain.types import Place

from ..fakes.embedders import HashEmbedder
from .conftest import World, serving

os.environ.setdefault("MEM0_TELEMETRY", "False")  # mem0 sends usage to PostHog unless told not to

mem0 = pytest.importorskip("mem0", reason="mem0ai is in the test extra")
from mem0 import MemoryClient  # noqa: E402
from mem0.exceptions import MemoryNotFoundError, ValidationError  # noqa: E402


@pytest.fixture(autouse=True)
def mem0_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))  # where the client writes its config


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> Iterator[tuple[World, str]]:
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    world = make_world(engine, embedder=HashEmbedder())
    with serving(world) as url:
        yield world, url


def client(url: str, world: World, key: str = "a") -> Any:
    return MemoryClient(api_key=world.keys[key], host=url)


def texts(found: Any) -> list[str]:
    items = found["results"] if isinstance(found, dict) else found
    return [m["memory"] for m in items]


def test_reads_take_limit_enable_graph_false_and_an_add_s_options_with_their_meaning(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    for text in ("Likes green tea", "Drinks coffee at noon", "Plays the cello", "Lives in Lyon"):
        memory.add(text, user_id="ada", infer=False)
    ada = {"user_id": "ada"}
    # mem0-mcp-server sends `limit` and enable_graph=false on every search; AutoGen and CrewAI `limit`.
    assert len(memory.search("tea", filters=ada, limit=2, enable_graph=False, threshold=0.0)["results"]) == 2
    assert len(memory.search("tea", filters=ada, limit=2, top_k=3, threshold=0.0)["results"]) == 3  # top_k is the platform's name
    # LangChain.js spreads an add's options into its reads: they mean nothing to a read.
    options = {"infer": False, "custom_categories": [{"food": "what they eat"}], "custom_instructions": "x",
               "includes": "food", "excludes": "health", "immutable": False, "async_mode": True}
    assert texts(memory.search("green tea", filters=ada, top_k=1, **options)) == ["Likes green tea"]
    # A listing's `top_k` (1.x docstring) and `limit` cap it; the newest first.
    assert texts(memory.get_all(filters=ada, top_k=2)) == ["Lives in Lyon", "Plays the cello"]
    assert memory.get_all(filters=ada, limit=1, enable_graph=False)["count"] == 1
    with pytest.raises(ValidationError, match="graph"):
        memory.search("tea", filters=ada, enable_graph=True)  # no graph memory here: said, never pretended
    with pytest.raises(ValidationError, match="graph"):
        memory.get_all(filters=ada, enable_graph=True)
    with pytest.raises(ValidationError, match="limit"):
        memory.search("tea", filters=ada, limit=0)


def test_a_listing_narrows_by_categories_and_a_created_date_window(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    memory.add("Wants a hotel near the old town", user_id="ada", categories=["travel"], infer=False)
    memory.add("Likes green tea", user_id="ada", categories=["food"], infer=False)
    ada = {"user_id": "ada"}
    assert texts(memory.get_all(filters=ada, categories=["travel"])) == ["Wants a hotel near the old town"]
    assert texts(memory.search("tea hotel", filters=ada, categories=["food"], threshold=0.0)) == ["Likes green tea"]
    today = world.runtime.service.list(Place("ada", world.tenant_a)).items[0].created_at.date().isoformat()
    assert len(texts(memory.get_all(filters=ada, start_date=today, end_date=today))) == 2  # both ends kept
    assert texts(memory.get_all(filters=ada, end_date="2001-01-01")) == []
    assert texts(memory.get_all(filters=ada, start_date="2999-01-01T00:00:00Z")) == []
    with pytest.raises(ValidationError, match="start_date"):
        memory.get_all(filters=ada, start_date="last tuesday")


def test_top_level_ids_beside_the_person_narrow_a_v2_read(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    memory.add("Wants a window seat", user_id="ada", agent_id="travel-bot", run_id="trip-7", infer=False)
    memory.add("Wants an aisle seat", user_id="ada", agent_id="travel-bot", run_id="trip-8", infer=False)
    memory.add("Likes green tea", user_id="ada", infer=False)
    # 1.0.11 and npm 2.4.6 send the ids top-level on /v2/ reads (2.2.1 refuses them on its own side).
    body = {"query": "seat", "user_id": "ada", "agent_id": "travel-bot", "run_id": "trip-7", "limit": 5,
            "org_id": memory.org_id, "project_id": memory.project_id, "output_format": "v1.1", "version": "v2"}
    found = memory.client.post("/v2/memories/search/", json=body)
    assert found.status_code == 200 and texts(found.json()) == ["Wants a window seat"]
    listed = memory.client.post("/v2/memories/", json={"user_id": "ada", "agent_id": "travel-bot"})
    assert sorted(texts(listed.json())) == ["Wants a window seat", "Wants an aisle seat"]
    # An id that says another than the filters' is a contradiction, not a wider read.
    clash = memory.client.post("/v2/memories/", json={"filters": {"agent_id": "other"}, "user_id": "ada",
                                                      "agent_id": "travel-bot"})
    assert clash.status_code == 400


def test_output_format_says_the_shape_of_a_search_on_every_path(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    memory.add("Likes green tea", user_id="ada", infer=False)
    for path in ("/v1/memories/search/", "/v2/memories/search/", "/v3/memories/search/"):
        wrapped = memory.client.post(path, json={"query": "tea", "user_id": "ada", "output_format": "v1.1"}).json()
        assert texts(wrapped["results"]) == ["Likes green tea"], path  # CrewAI reads results["results"]
        bare = memory.client.post(path, json={"query": "tea", "user_id": "ada", "output_format": "v1.0"}).json()
        assert isinstance(bare, list) and texts(bare) == ["Likes green tea"], path
    assert memory.client.post("/v2/memories/search/", json={"query": "tea", "user_id": "ada",
                                                             "output_format": "v9"}).status_code == 400


def test_the_vercel_provider_s_own_settings_in_a_body_are_ignored_never_kept_or_echoed(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    secret = "sk-provider-secret-123"
    spread = {"mem0ApiKey": secret, "host": url, "provider": "openai", "apiKey": secret, "modelType": "chat",
              "org_name": "o", "project_name": "p", "version": "v2", "enable_graph": False}
    added = memory.client.post("/v1/memories/", json={"messages": [{"role": "user", "content": "Likes tea"}],
                                                      "user_id": "ada", "infer": False, **spread})
    assert added.status_code == 200 and secret not in added.text
    found = memory.client.post("/v2/memories/search/", json={
        "query": "tea", "filters": {"OR": [{"user_id": "ada"}]}, "user_id": "ada", "top_k": 5, **spread,
        "output_format": "v1.1"})
    assert found.status_code == 200 and texts(found.json()) == ["Likes tea"] and secret not in found.text
    exported = world.runtime.service.export(Place("ada", world.tenant_a))
    assert secret not in repr(exported)


def test_an_or_of_the_person_and_their_run_or_agent_is_served_inside_that_person_s_place(
        served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    memory.add("Wants a window seat", user_id="ada", agent_id="travel-bot", run_id="trip-7", infer=False)
    memory.add("Likes green tea", user_id="ada", infer=False)
    memory.add("Wants an aisle seat", user_id="bob", agent_id="travel-bot", run_id="trip-7", infer=False)
    # LlamaIndex 1.0.0 with two context keys or more: person OR run OR agent.
    either = {"OR": [{"user_id": "ada"}, {"run_id": "trip-7"}, {"agent_id": "travel-bot"}]}
    found = texts(memory.search("seat tea", filters=either, top_k=10, threshold=0.0))
    assert sorted(found) == ["Likes green tea", "Wants a window seat"]  # ada's, never bob's trip
    assert sorted(texts(memory.get_all(filters=either))) == ["Likes green tea", "Wants a window seat"]
    # mem0-mcp-server: an OR of ids beside an AND naming the person: the person's memories that hold one.
    by_agent = {"OR": [{"agent_id": "travel-bot"}, {"run_id": "trip-9"}], "AND": [{"user_id": "ada"}]}
    assert texts(memory.get_all(filters=by_agent)) == ["Wants a window seat"]
    with pytest.raises(ValidationError, match="one user_id"):
        memory.search("seat", filters={"OR": [{"user_id": "ada"}, {"user_id": "bob"}]})
    with pytest.raises(ValidationError, match="user_id"):
        memory.search("seat", filters={"OR": [{"agent_id": "travel-bot"}, {"run_id": "trip-7"}]})  # no person: whose?
    with pytest.raises(ValidationError, match="one user_id"):
        memory.get_all(filters={"AND": [{"user_id": "ada"}, {"OR": [{"user_id": "bob"}, {"agent_id": "x"}]}]})


def test_an_iso_timestamp_is_kept_as_seconds_as_mem0_does(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    tea = memory.add("Likes green tea", user_id="ada", infer=False)["results"][0]["id"]
    assert memory.update(tea, timestamp="2025-01-15T12:00:00Z")["timestamp"] == 1736942400  # 1.0.11's docstring
    assert memory.update(tea, timestamp="2025-01-15T13:00:00+01:00")["timestamp"] == 1736942400
    assert memory.update(tea, timestamp=1736942401.9)["timestamp"] == 1736942401
    said = memory.add("Lives in Lyon", user_id="ada", timestamp="2025-01-15", infer=False)["results"][0]["id"]
    assert memory.get(said)["timestamp"] == 1736899200
    with pytest.raises(ValidationError):
        memory.update(tea, timestamp="yesterday")


def test_delete_linked_forgets_the_memory_with_every_wording_it_had(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    tea = memory.add("Likes green tea", user_id="ada", infer=False)["results"][0]["id"]
    memory.update(tea, text="Likes jasmine tea")
    said = memory.delete(tea, delete_linked=True)["message"]
    assert "earlier wording" in said
    with pytest.raises(MemoryNotFoundError):
        memory.history(tea)
    assert world.count("ada") == 0


def test_an_endpoint_this_server_does_not_serve_says_so(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    tea = memory.add("Likes green tea", user_id="ada", infer=False)["results"][0]["id"]
    for call in (lambda: memory.feedback(tea, "POSITIVE"), lambda: memory.batch_update([{"memory_id": tea, "text": "x"}]),
                 lambda: memory.create_memory_export("{}", filters={"user_id": "ada"}),
                 lambda: memory.get_webhooks(memory.project_id)):
        with pytest.raises(Exception) as raised:
            call()
        assert "does not serve" in str(raised.value) and "does not exist" not in str(raised.value)
    # CrewAI's custom_categories: mem0's project settings, under the prefix of our own JSON API.
    with pytest.raises(MemoryNotFoundError, match="does not serve mem0's project") as patched:
        memory.update_project(custom_categories=[{"food": "what they eat"}])
    assert patched.value.details["code"] == "not_served"  # the JSON body mem0's client read, its type JSON
    with httpx.Client(base_url=url) as raw:  # our own JSON API: an unknown path is no missing memory
        unknown = raw.get("/api/v1/nothing/here", headers={"Authorization": f"Bearer {world.keys['a']}"})
        assert unknown.status_code == 404 and unknown.json()["code"] == "not_served"
        assert raw.post("/v2/anything/", json={}).json()["code"] == "not_served"
    assert memory.get(tea)["memory"] == "Likes green tea"  # a memory that is not there still says so
    with pytest.raises(MemoryNotFoundError, match="no such memory"):
        memory.get("0" * 32)


def test_crewai_s_search_body_narrows_by_its_metadata_and_answers_results(served: tuple[World, str]) -> None:
    world, url = served
    memory = client(url, world)
    memory.add("Prefers morning meetings", user_id="ada", metadata={"type": "short_term"}, infer=False)
    memory.add("Prefers evening flights", user_id="ada", metadata={"type": "long_term"}, infer=False)
    # What CrewAI 0.203's Mem0Storage.search sends through mem0ai 1.0.11 (top-level user_id and metadata).
    body = {"query": "prefers", "limit": 3, "version": "v2", "output_format": "v1.1", "user_id": "ada",
            "metadata": {"type": "short_term"}, "filters": {"AND": [{"user_id": "ada"}]}, "threshold": 0.0,
            "org_id": memory.org_id, "project_id": memory.project_id}
    found = memory.client.post("/v2/memories/search/", json=body)
    assert found.status_code == 200 and texts(found.json()["results"]) == ["Prefers morning meetings"]
    clash = memory.client.post("/v2/memories/search/", json={**body, "filters": {"metadata": {"type": "long_term"}}})
    assert clash.status_code == 400 and clash.json()["code"] == "invalid_filters"  # both cannot hold: never the wider
