"""Issue 38, from the attacker's pass: input that reached a 500 or did another thing than it said,
on SQLite and PostgreSQL, through the JSON API and mem0's own Python client (`mem0ai`). Each test
failed on the code before its fix, as its docstring says."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

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
