"""`POST /people/{owner_id}/forget-matching` (issue 29, item 4), on SQLite and PostgreSQL: a dry run
previews what a subject matches with a token, a confirmation by ids forgets exactly those, audited
once; what was not previewed, a token of another person or tenant, and a memory corrected since are
refused or kept with their codes; the client speaks it; an app's preview is a read, nothing more."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from portal.client import Refused
from portal.domain.types import Place

from .conftest import API, World
from .test_requests import is_problem

ADA = f"{API}/people/ada"


def remember(world: World, text_: str, key: str = "a", owner: str = "ada") -> str:
    answer = world.raw().post(f"{API}/people/{owner}/memories", json={"text": text_, "on_duplicate": "reinforce"},
                              headers=world.auth(key))
    assert answer.status_code == 201, answer.json
    return str(answer.json["memory"]["id"])


def post(world: World, body: Any, key: str = "a", owner: str = "ada", **headers: str) -> Any:
    return world.raw().post(f"{API}/people/{owner}/forget-matching", json=body, headers=world.auth(key, **headers))


def texts(world: World, owner: str = "ada", key: str = "a") -> set[str]:
    listed = world.raw().get(f"{API}/people/{owner}/memories", query_string={"state": "all"}, headers=world.auth(key))
    return {m["text"] for m in listed.json["items"]}


def test_a_dry_run_previews_and_a_confirmation_forgets_exactly_the_ids_sent(any_world: World) -> None:
    world = any_world
    green, four, pot = (remember(world, t) for t in ("Likes green tea", "Drinks tea at four", "Bought a teapot for tea"))
    remember(world, "Runs on Mondays")
    preview = post(world, {"query": "tea", "dry_run": True})
    assert preview.status_code == 200, preview.json
    assert {m["id"] for m in preview.json["items"]} == {green, four, pot}
    assert preview.json["more"] is False and all(m["last_used_at"] is None for m in preview.json["items"])
    assert texts(world) == {"Likes green tea", "Drinks tea at four", "Bought a teapot for tea", "Runs on Mondays"}
    done = post(world, {"preview": preview.json["preview"], "ids": [green, four]}, **{"Idempotency-Key": "forget-1"})
    assert done.status_code == 200, done.json
    assert done.json == {"memories": 2, "revisions": 0, "forgotten": [green, four], "changed": [], "gone": []}
    assert texts(world) == {"Bought a teapot for tea", "Runs on Mondays"}
    for gone in (green, four):
        is_problem(world.raw().get(f"{ADA}/memories/{gone}", headers=world.auth()), 404, "not_found")
    # Sent again with its key, nothing more is forgotten, and no answer was stored for the key.
    again = post(world, {"preview": preview.json["preview"], "ids": [green, four]}, **{"Idempotency-Key": "forget-1"})
    assert again.json["gone"] == [green, four] and again.json["forgotten"] == []
    assert "Idempotent-Replayed" not in again.headers
    with world.runtime.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM idempotency_receipts")).scalar() == 0
    trail = [e for e in world.runtime.store.audit_trail() if e.action == "person.forgot_matching"]
    assert len(trail) == 1
    assert (trail[0].actor_id, trail[0].actor_role, trail[0].counts) == (world.key_ids["a"], "api_key",
                                                                           {"memories": 2, "revisions": 0})


def test_ids_not_previewed_and_tokens_of_another_person_or_tenant_are_refused(any_world: World) -> None:
    world = any_world
    ada = remember(world, "Likes green tea")
    bob = remember(world, "Likes black tea", owner="bob")
    tenant_b_ada = remember(world, "Likes white tea", key="b")  # another tenant's "ada": another person
    preview = post(world, {"query": "tea", "dry_run": True}).json
    bobs = post(world, {"query": "tea", "dry_run": True}, owner="bob").json
    theirs = post(world, {"query": "tea", "dry_run": True}, key="b").json
    later = remember(world, "Drinks tea at four")
    is_problem(post(world, {"preview": preview["preview"], "ids": [ada, later]}), 422, "not_previewed")
    is_problem(post(world, {"preview": preview["preview"], "ids": [bob]}), 422, "not_previewed")
    is_problem(post(world, {"preview": bobs["preview"], "ids": [bob]}), 422, "invalid_preview")
    is_problem(post(world, {"preview": theirs["preview"], "ids": [tenant_b_ada]}), 422, "invalid_preview")
    is_problem(post(world, {"preview": preview["preview"] + "x", "ids": [ada]}), 422, "invalid_preview")
    is_problem(post(world, {"ids": [ada]}), 422, "invalid_preview")
    is_problem(post(world, {"query": "tea"}), 422, "invalid_preview")  # forgetting by subject is previewed first
    assert texts(world) == {"Likes green tea", "Drinks tea at four"}
    assert texts(world, "bob") == {"Likes black tea"} and texts(world, key="b") == {"Likes white tea"}


def test_a_memory_corrected_since_the_preview_is_kept_and_named(any_world: World) -> None:
    world = any_world
    green, four = remember(world, "Likes green tea"), remember(world, "Drinks tea at four")
    preview = post(world, {"query": "tea", "dry_run": True}).json
    assert world.raw().patch(f"{ADA}/memories/{four}", json={"text": "Drinks tea at five"},
                             headers=world.auth()).status_code == 200
    done = post(world, {"preview": preview["preview"], "ids": [green, four]}).json
    assert (done["forgotten"], done["changed"]) == ([green], [four])
    assert texts(world) == {"Drinks tea at five"}


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"dry_run": True}, 400, "invalid_subject"),
    ({"query": "   ", "dry_run": True}, 400, "invalid_subject"),
    ({"query": "x" * 501, "dry_run": True}, 400, "invalid_request"),
    ({"query": "te\x00a", "dry_run": True}, 400, "invalid_text"),
    ({"query": "tea", "dry_run": True, "ids": ["m"]}, 400, "invalid_request"),
    ({"query": "tea", "dry_run": "yes"}, 400, "invalid_request"),
    ({"preview": "p", "ids": ["m"] * 201}, 400, "invalid_request"),
    ({"preview": "p", "ids": "m"}, 400, "invalid_request"),
])
def test_malformed_requests_are_refused_with_their_codes(world: World, body: dict[str, Any], status: int,
                                                         code: str) -> None:
    remember(world, "Likes green tea")
    is_problem(post(world, body), status, code)
    assert texts(world) == {"Likes green tea"}


def test_the_client_previews_and_forgets(any_world: World) -> None:
    world = any_world
    client = world.client()
    green, four = remember(world, "Likes green tea"), remember(world, "Drinks tea at four")
    found = client.preview_forget_matching("ada", "tea")
    assert {m.id for m in found.items} == {green, four} and not found.more
    with pytest.raises(Refused) as refused:
        client.forget_matching("ada", found.preview, [green, "not-previewed"])
    assert refused.value.code == "not_previewed"
    done = client.forget_matching("ada", found.preview, [green], idempotency_key="k1")
    assert (done.memories, done.forgotten, done.changed, done.gone) == (1, [green], [], [])
    assert texts(world) == {"Drinks tea at four"}


def test_an_apps_preview_is_a_read_and_marks_nothing_used(any_world: World) -> None:
    world = any_world
    green = remember(world, "Likes green tea")
    assert post(world, {"query": "tea", "dry_run": True}).status_code == 200
    with world.runtime.store.read(Place("ada", world.tenant_a)) as tx:
        uses = {(u.memory_id, u.action) for u in tx.app_uses()}
        assert tx.get(green).last_used_at is None  # type: ignore[union-attr]
    assert (green, "read") in uses and (green, "recalled") not in uses


def test_a_full_preview_is_confirmed_in_one_request(world: World) -> None:
    """Two hundred ids and the token that seals them fit in one request body (64 KiB)."""
    world.runtime.service.remember_many(Place("ada", world.tenant_a), [f"Tea note number {n}" for n in range(205)],
                                        on_duplicate="keep")
    preview = post(world, {"query": "tea", "dry_run": True}).json
    assert len(preview["items"]) == 200 and preview["more"] is True
    done = post(world, {"preview": preview["preview"], "ids": [m["id"] for m in preview["items"]]})
    assert done.status_code == 200 and done.json["memories"] == 200
    assert len(texts(world)) == 5
