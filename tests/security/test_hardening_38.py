"""Issue 38, from the attacker's pass: input that reached a 500 or did another thing than it said,
on SQLite and PostgreSQL, through the JSON API and mem0's own Python client (`mem0ai`). Each test
failed on the code before its fix, as its docstring says."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from portal.domain import subjects
from portal.domain.types import Place

from ..api import conftest as api_fixtures
from ..api.conftest import API, World, serving

os.environ.setdefault("MEM0_TELEMETRY", "False")  # mem0 sends usage to PostHog unless told not to
mem0 = pytest.importorskip("mem0", reason="mem0ai is in the test extra")
from mem0 import MemoryClient  # noqa: E402
from mem0.exceptions import ValidationError  # noqa: E402

# The worlds of tests/api (tenants A and B, keys of every kind, no 5xx allowed at teardown).
sqlite_engine = api_fixtures.sqlite_engine
make_world = api_fixtures.make_world


@pytest.fixture(autouse=True)
def mem0_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))  # where mem0's client writes its config


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> World:
    return make_world(request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine"))


@pytest.fixture
def served(world: World) -> Iterator[tuple[World, MemoryClient]]:
    with serving(world) as url:
        yield world, MemoryClient(api_key=world.keys["a"], host=url)


def token(world: World) -> dict[str, str]:
    return {"Authorization": f"Token {world.keys['a']}"}


def add(world: World, text: str, owner: str) -> None:
    """A memory through our own API (which takes any id, "*" included: it is no wildcard there)."""
    answer = world.raw().post(f"{API}/people/{owner}/memories", json={"text": text}, headers=world.auth())
    assert answer.status_code == 201, answer.get_json()


# ------------------------------------------------------------------ 18. mem0's "every user" wildcard


def test_deleting_the_user_entity_star_is_refused_as_delete_all_is(served: tuple[World, Any]) -> None:
    """`delete_users(user_id="*")` (DELETE /v2/entities/user/%2A/) and DELETE /v1/entities/user/*/
    answered 200 "Memories deleted successfully!" while erasing only a person literally named "*":
    a wipe believed done, everyone's memories still kept."""
    world, memory = served
    for owner, text in (("ada", "Likes green tea"), ("bob", "Plays the cello"), ("*", "Named like a wildcard")):
        add(world, text, owner)
    with pytest.raises(ValidationError) as refused:
        memory.delete_users(user_id="*")
    assert "one user_id per request" in str(refused.value)
    for path in ("/v1/entities/user/*/", "/v2/entities/user/%2A/", "/v1/entities/user/%2a"):
        answer = world.raw().delete(path, headers=token(world))
        assert (answer.status_code, answer.get_json()["code"]) == (400, "one_person"), path
    assert [world.count(owner) for owner in ("ada", "bob", "*")] == [1, 1, 1]
    assert memory.delete_users(user_id="bob") == {"message": "Entity deleted successfully."}
    assert [world.count(owner) for owner in ("ada", "bob", "*")] == [1, 0, 1]


# ------------------------------------------------------------------ 21. 500s on bad input

FAR = 4_102_444_800  # 2100-01-01: a token's expiry that has not come


def signed(world: World, payload: str, owner: str = "ada") -> str:
    """A preview token of ours, sealed with the store's own secret, around any payload: what only
    a holder of that secret (or anyone, on a deployment without one) can make."""
    body = subjects._b64(payload.encode())
    return f"f1.{body}.{subjects._b64(subjects._mac(Place(owner, world.tenant_a), body, world.runtime.store.words_secret))}"


def forget_matching(world: World, body: dict[str, Any]) -> tuple[int, str]:
    answer = world.raw().post(f"{API}/people/ada/forget-matching", json=body, headers=world.auth())
    return answer.status_code, answer.get_json()["code"]


def test_a_preview_token_that_no_preview_made_is_invalid_preview(world: World) -> None:
    """A non-ASCII character in the token's signature (`hmac.compare_digest` raised TypeError), and
    a signed payload nested 20,000 deep (RecursionError) or naming a revision Infinity (int() raised
    OverflowError), answered 500."""
    add(world, "Likes green tea", "ada")
    preview = world.raw().post(f"{API}/people/ada/forget-matching", json={"query": "tea", "dry_run": True},
                               headers=world.auth()).get_json()
    (memory_id,) = [m["id"] for m in preview["items"]]
    real_body = preview["preview"].split(".")[1]
    tokens = [
        "f1.abc.é", f"f1.{real_body}.é", f"f1.{real_body}é.abc", "f1.abc.\u0661",
        signed(world, f'{{"x":{FAR},"m":' + "[" * 20_000 + "]" * 20_000 + "}"),
        signed(world, f'{{"x":{FAR},"m":[["{memory_id}",Infinity]]}}'),
        signed(world, f'{{"x":{FAR},"m":[["{memory_id}",1e999]]}}'),
        signed(world, f'{{"x":{FAR},"m":[["{memory_id}",NaN]]}}'),
        signed(world, f'{{"x":Infinity,"m":[["{memory_id}",1]]}}'),
        signed(world, f'{{"x":{FAR},"m":[["{memory_id}",1{"0" * 5000}]]}}'),
        signed(world, f'{{"x":{FAR},"m":{{"{memory_id}":1}}}}'),
    ]
    for sent in tokens:
        assert forget_matching(world, {"preview": sent, "ids": [memory_id]}) == (422, "invalid_preview"), sent[:40]
    assert world.count("ada") == 1
    # The tokens above are signed as ours are: one that says what a preview says is taken.
    taken = world.raw().post(f"{API}/people/ada/forget-matching", headers=world.auth(), json={
        "preview": signed(world, f'{{"x":{FAR},"m":[["{memory_id}",1]]}}'), "ids": [memory_id]})
    assert taken.status_code == 200 and taken.get_json()["forgotten"] == [memory_id]


OFF_THE_CALENDAR = ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"]  # no such moment in UTC


@pytest.mark.parametrize("value", OFF_THE_CALENDAR)
def test_an_expiry_that_leaves_the_calendar_in_utc_is_invalid_expiry(world: World, value: str) -> None:
    """`expires_at` whose UTC time would be past year 9999 or before year 1 raised OverflowError
    (astimezone): 500 on remember, correct and the remember tool."""
    person = f"{API}/people/ada"
    answer = world.raw().post(f"{person}/memories", json={"text": "Is in Lyon", "expires_at": value}, headers=world.auth())
    assert (answer.status_code, answer.get_json()["code"]) == (422, "invalid_expiry")
    add(world, "Has a cat", "ada")
    (memory_id,) = [m.id for m in world.runtime.service.list(Place("ada", world.tenant_a)).items]
    answer = world.raw().patch(f"{person}/memories/{memory_id}", json={"expires_at": value}, headers=world.auth())
    assert (answer.status_code, answer.get_json()["code"]) == (422, "invalid_expiry")
    tool = world.raw().post(f"{person}/tools/remember", headers=world.auth(),
                            json={"arguments": {"text": "Is in Lyon", "expires_at": value}})
    assert tool.status_code == 200 and (tool.get_json()["ok"], tool.get_json()["reason"]) == (False, "invalid_expiry")
    assert world.count("ada") == 1 and world.runtime.service.get(Place("ada", world.tenant_a), memory_id).expires_at is None


def test_mem0s_last_expiration_date_is_refused_not_a_500(served: tuple[World, Any]) -> None:
    """`expiration_date` 9999-12-31 made an expiry at the end of that day, 10000-01-01, which has no
    datetime: OverflowError, 500 on add and update."""
    world, memory = served
    with pytest.raises(ValidationError) as refused:
        memory.add("Is in Lyon", user_id="ada", infer=False, expiration_date="9999-12-31")
    assert refused.value.error_code == "HTTP_422"
    kept = memory.add("Has a cat", user_id="ada", infer=False)["results"][0]["id"]
    with pytest.raises(ValidationError):
        memory.update(kept, expiration_date="9999-12-31")
    assert world.runtime.service.get(Place("ada", world.tenant_a), kept).expires_at is None
    later = memory.add("Is in Rome", user_id="ada", infer=False, expiration_date="9999-12-30")["results"][0]["id"]
    assert world.runtime.service.get(Place("ada", world.tenant_a), later).expires_at.year == 9999


@pytest.mark.parametrize("ref", [{"id": "chat-1"}, ["chat-1"], 7])
def test_mem0s_search_with_a_conversation_ref_that_is_not_text_is_refused(served: tuple[World, Any], ref: Any) -> None:
    """An object or an array as `conversation_ref` was used as a dictionary key (TypeError: unhashable):
    500."""
    world, memory = served
    memory.add("Likes green tea", user_id="ada", infer=False)
    with pytest.raises(ValidationError, match="conversation reference") as refused:
        memory.search("green tea", filters={"user_id": "ada"}, conversation_ref=ref)
    assert refused.value.error_code == "HTTP_422"
    assert world.runtime.service.conversations(Place("ada", world.tenant_a)) == []


@pytest.mark.parametrize("value", OFF_THE_CALENDAR)
def test_mem0s_date_filters_off_the_calendar_are_invalid_filters(world: World, value: str) -> None:
    """A sibling read the same way: mem0's `created_at` filters."""
    add(world, "Likes green tea", "ada")
    answer = world.raw().post("/v2/memories/", headers=token(world),
                              json={"filters": {"AND": [{"user_id": "ada"}, {"created_at": {"gte": value}}]}})
    assert (answer.status_code, answer.get_json()["code"]) == (400, "invalid_filters")
