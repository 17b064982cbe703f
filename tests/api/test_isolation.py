"""Nothing crosses tenants or owners (DESIGN §2, §11): tenant B's key on tenant A's person and
ids, and tenant A's key on another owner with ada's ids, get 404 or empty answers on every
endpoint — and afterwards nothing of ada in tenant A has changed."""

from __future__ import annotations

from typing import Any

import pytest

from portal.client import Forbidden, MemoryClient, NotFound
from portal.domain.types import Place

from .conftest import World


def seed(world: World) -> dict[str, str]:
    """Ada in tenant A: a corrected memory, a background one not yet seen, a pinned one, paused."""
    with world.client() as memory:
        tea = memory.remember("ada", "Prefers green tea", importance=5, idempotency_key="turn-1").memory
        memory.update("ada", tea.id, text="Prefers green tea in the morning")
        pinned = memory.remember("ada", "Is vegetarian", pinned=True).memory
        learnt = world.runtime.service.remember(Place("ada", world.tenant_a), "Has a cat called Miso", origin="inferred",
                                                channel="background")
        memory.set_paused("ada", True)
    return {"tea": tea.id, "pinned": pinned.id, "learnt": learnt.memory.id}  # type: ignore[union-attr]


def snapshot(world: World) -> dict[str, Any]:
    """Everything kept about ada in tenant A, read through the service (not through the API under test)."""
    data = world.runtime.service.export(Place("ada", world.tenant_a))
    data.pop("exported_at")
    return data


def probe(memory: MemoryClient, owner: str, ids: dict[str, str], tenant_of_key: str) -> None:
    """Every endpoint that takes a person or an id, aimed at ada's ids from where they must not be seen."""
    for memory_id in ids.values():
        for call in (
            lambda: memory.get(owner, memory_id),
            lambda: memory.history(owner, memory_id),
            lambda: memory.update(owner, memory_id, text="Prefers coffee"),
            lambda: memory.update(owner, memory_id, pinned=False, if_revision=1),
            lambda: memory.undo(owner, memory_id),
            lambda: memory.forget(owner, memory_id),
        ):
            with pytest.raises(NotFound) as missing:
                call()
            assert (missing.value.status, missing.value.code) == (404, "not_found")
    every = list(ids.values())
    assert memory.list(owner, state="all").items == []
    assert list(memory.iter_memories(owner)) == []
    assert memory.recall(owner, "green tea morning vegetarian cat Miso") == []
    portrait = memory.portrait(owner, min_importance=1)
    assert portrait.ids == [] and "tea" not in portrait.text
    assert memory.mark_used(owner, every) == 0
    assert memory.unseen(owner) == []
    assert memory.mark_seen(owner, every) == 0
    assert memory.get_settings(owner) is False
    with pytest.raises(Forbidden) as theirs:  # no app lifts a pause, here or anywhere
        memory.set_paused(owner, False)
    assert theirs.value.code == "person_decides"
    exported = memory.export(owner)
    assert (exported.owner_id, exported.scope, exported.memories, exported.paused) == (owner, tenant_of_key, [], False)
    found = memory.call_tool(owner, "recall", {"query": "green tea"})
    assert (found["ok"], found["code"], found["memories"]) == (True, "memories_found", [])
    for name, arguments in (("update_memory", {"id": ids["tea"], "text": "Prefers coffee"}), ("forget", {"id": ids["tea"]})):
        answer = memory.call_tool(owner, name, arguments)
        assert (answer["ok"], answer["code"], answer["reason"]) == (False, "refused", "not_found")
    # The same Idempotency-Key and body as ada's first write in tenant A: no replay of her answer.
    fresh = memory.remember(owner, "Prefers green tea", importance=5, idempotency_key="turn-1")
    assert not fresh.replayed and fresh.memory.id not in every
    assert memory.consolidate(owner, "I like tea", "conv-1").status == "unavailable"


def test_tenant_b_sees_and_changes_nothing_of_tenant_a(any_world: World) -> None:
    ids = seed(any_world)
    before = snapshot(any_world)
    with any_world.client("b") as memory:
        probe(memory, "ada", ids, any_world.tenant_b)
    assert snapshot(any_world) == before


def test_another_owner_in_the_same_tenant_sees_and_changes_nothing_of_ada(any_world: World) -> None:
    ids = seed(any_world)
    before = snapshot(any_world)
    with any_world.client("a") as memory:
        probe(memory, "bob", ids, any_world.tenant_a)
        assert memory.erase_person("bob").memories == 1  # the one probe() made for bob
    assert snapshot(any_world) == before


def test_owner_ids_are_compared_exactly(world: World) -> None:
    ids = seed(world)
    before = snapshot(world)
    with world.client("a") as memory:
        for owner in ("Ada", "ada ", " ada", "ad", "%61da"):
            with pytest.raises(NotFound):
                memory.get(owner, ids["tea"])
            assert memory.list(owner).items == []
    # httpx's WSGI transport cannot carry non-Latin-1 paths; the Flask client sends the encoded bytes.
    answer = world.raw().get(f"/api/v1/people/ada%E2%80%8B/memories/{ids['tea']}", headers=world.auth())
    assert answer.status_code == 404
    assert snapshot(world) == before


def test_tenant_b_erasing_its_ada_leaves_tenant_a_ada_alone(any_world: World) -> None:
    seed(any_world)
    before = snapshot(any_world)
    with any_world.client("b") as memory:
        memory.remember("ada", "Lives in Oslo")
        counts = memory.erase_person("ada")
        assert counts.memories == 1
        assert memory.list("ada").items == []
    assert snapshot(any_world) == before


def test_an_owner_id_with_a_slash_never_leads_to_another_owner(world: World) -> None:
    ids = seed(world)
    before = snapshot(world)
    raw = world.raw()
    url = f"/api/v1/people/ada%2F/memories/{ids['tea']}"
    for method in ("GET", "PATCH", "DELETE"):
        answer = raw.open(url, method=method, json={"text": "Prefers coffee"} if method == "PATCH" else None,
                          headers=world.auth(), follow_redirects=True)
        assert answer.status_code == 404 and answer.mimetype == "application/problem+json", (method, answer.status)
    assert snapshot(world) == before
