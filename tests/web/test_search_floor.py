"""The portal's search narrows (the relevance floor, DESIGN §5): with a model, a query about
nothing the person's memories hold finds nothing instead of the closest of them."""

from __future__ import annotations

import pytest

from tests.fakes.embedders import HashEmbedder

from .conftest import World, page_text, row_ids


@pytest.fixture
def world_embedder() -> HashEmbedder:
    # Wide enough that unrelated words do not share a bucket; "puppy" means "dog".
    return HashEmbedder(dim=4096, synonyms={"puppy": "dog"})


def test_nonsense_finds_nothing_and_says_so(world: World) -> None:
    for text in ("I drink green tea every morning", "My dog is called Rex", "I play the cello"):
        world.remember(world.ada, text)
    client = world.client(world.ada)
    nothing = client.get("/memories", query_string={"q": "zzzqqq"})
    assert row_ids(nothing) == []
    assert "Nothing matches." in page_text(nothing)


def test_a_match_by_meaning_alone_still_counts(world: World) -> None:
    dog = world.remember(world.ada, "My dog is called Rex")
    world.remember(world.ada, "I drink green tea every morning")
    # no word in common with "puppy", but close by meaning (the fake model's synonym)
    assert row_ids(world.client(world.ada).get("/memories", query_string={"q": "puppy"})) == [dog.id]
