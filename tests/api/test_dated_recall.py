"""A period in a question (issue 31) through mem0's own client (`mem0ai`, pinned) with the local
model, on SQLite and PostgreSQL: memories added with mem0's `timestamp` (when they were said) and
one without (said when added); a search naming a period finds what was said in it first, in
English and in French, and leaves nothing out."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from portal.adapters.embedders import LocalEmbedder

from .conftest import World, serving

mem0 = pytest.importorskip("mem0", reason="mem0ai is in the test extra")
from mem0 import MemoryClient  # noqa: E402


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, make_world: Callable[..., World], tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[World, str]]:
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))  # where the client writes its config
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    world = make_world(engine, embedder=LocalEmbedder())
    with serving(world) as url:
        yield world, url


@pytest.mark.slow
def test_a_period_in_the_search_finds_what_was_said_in_it_first(served: tuple[World, str]) -> None:
    world, url = served
    memory = MemoryClient(api_key=world.keys["a"], host=url)
    now = datetime.now(UTC)
    last_may = int(datetime(now.year - 1, 5, 10, 12, tzinfo=UTC).timestamp())
    long_ago = int(datetime(now.year - 3, 8, 3, 12, tzinfo=UTC).timestamp())
    added = {}
    for name, text, said in (("oslo", "Went to Oslo to go skiing", None),
                             ("rome", "Went to Rome with old friends", last_may),
                             ("lisbon", "Went to Lisbon for a conference", long_ago)):
        given = {"timestamp": said} if said else {}
        added[name] = memory.add(text, user_id="ada", infer=False, **given)["results"][0]["id"]
    assert len(set(added.values())) == 3

    def ranked(query: str) -> list[str]:
        return [h["id"] for h in memory.search(query, filters={"user_id": "ada"}, top_k=3, threshold=0)["results"]]

    assert ranked(f"Where did they travel in May {now.year - 1}?")[0] == added["rome"]
    assert ranked("Where did they travel last year?")[0] == added["rome"]
    assert ranked(f"Where did they travel in {now.year - 3}?")[0] == added["lisbon"]
    assert ranked("Où sont-ils allés il y a trois ans ?")[0] == added["lisbon"]
    assert ranked("Where did they travel today?")[0] == added["oslo"]
    assert sorted(ranked("Where did they travel?")) == sorted(added.values())
    nothing_then = (now - timedelta(days=40)).strftime("%d %B %Y")  # a period nothing was said in: all found
    assert sorted(ranked(f"Where did they travel on {nothing_then}?")) == sorted(added.values())
