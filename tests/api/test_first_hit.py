"""Issue 31's five-memory example through the JSON API with the local model, on SQLite and on
PostgreSQL: "how do they like their replies?" answers "Prefers short answers" first, not "Likes
tea" (the stem "like" is one of the commonest words of English: weak evidence, whatever the
place's size)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from portal.adapters.embedders import LocalEmbedder

from .conftest import World

FIVE = ["Prefers short answers", "Likes tea", "Lives in Lyon", "Has a cat", "Training for a marathon"]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def local_world(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> World:
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    return make_world(engine, embedder=LocalEmbedder())


@pytest.mark.slow
def test_the_five_memory_example_answers_the_reply_preference_first(local_world: World) -> None:
    client = local_world.raw()
    for text in FIVE:
        made = client.post("/api/v1/people/ada/memories", json={"text": text}, headers=local_world.auth())
        assert made.status_code == 201, made.json
    for limit in (1, 3):
        found = client.post("/api/v1/people/ada/recall", json={"query": "how do they like their replies?",
                                                                "limit": limit}, headers=local_world.auth())
        assert found.status_code == 200
        assert found.json["items"][0]["memory"]["text"] == "Prefers short answers", found.json["items"]
