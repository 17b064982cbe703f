"""Recall by meaning and by words with a small deterministic embedder, and the AI switched off
for a tenant (DESIGN §6): only the model-facing endpoints answer `ai_disabled`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from portal.client import Forbidden, NotFound, Refused
from portal.domain.types import Place

from .conftest import World

CONCEPTS = {"cat": 0, "cats": 0, "kitten": 0, "feline": 0, "marathon": 1, "running": 1, "runs": 1, "tea": 2, "chai": 2}


class ConceptEmbedder:
    """Our own Embedder protocol, faked: one dimension per concept plus a small constant one, so
    'feline' and 'kitten' mean the same and unknown words mean almost nothing."""

    model_id = "fake-concepts-4"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        self.calls += 1
        vectors = np.zeros((len(texts), 4), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().replace(".", " ").split():
                if word in CONCEPTS:
                    vectors[row, CONCEPTS[word]] += 1.0
            vectors[row, 3] = 0.1
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), self.model_id


@pytest.fixture
def vector_world(make_world: Callable[..., World], sqlite_engine: Any) -> World:
    return make_world(sqlite_engine, embedder=ConceptEmbedder())


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_vector_world(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> World:
    """With vectors in SQLite (float32 blobs, scanned in process) and in PostgreSQL (pgvector)."""
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    return make_world(engine, embedder=ConceptEmbedder())


def test_recall_says_how_each_memory_was_found(any_vector_world: World) -> None:
    vector_world = any_vector_world
    with vector_world.client() as memory:
        kitten = memory.remember("ada", "Has a kitten called Miso").memory
        memory.remember("ada", "Trains for the marathon")
        memory.remember("ada", "Prefers green tea")
        assert kitten.has_vector
        by_meaning = memory.recall("ada", "feline friend", min_similarity=0.5)
        assert [(h.memory.id, h.match) for h in by_meaning] == [(kitten.id, "vector")]
        both = memory.recall("ada", "kitten", min_similarity=0.5)
        assert [(h.memory.id, h.match) for h in both] == [(kitten.id, "hybrid")]
        by_words = memory.recall("ada", "Miso", min_similarity=0.5)
        assert [(h.memory.id, h.match) for h in by_words] == [(kitten.id, "lexical")]
        ranked = memory.recall("ada", "kitten", limit=3)
        assert ranked[0].memory.id == kitten.id and ranked[0].score >= ranked[-1].score


def test_relevant_only_keeps_the_floor_of_the_host(any_vector_world: World) -> None:
    """`relevant_only`: a hit shares a word with the query or is as close as the relevance floor
    (0.2 by default); without it the closest memories come back whatever they are."""
    with any_vector_world.client() as memory:
        kitten = memory.remember("ada", "Has a kitten called Miso").memory
        memory.remember("ada", "Trains for the marathon")
        assert len(memory.recall("ada", "zzzqqq", limit=5)) == 2  # the closest, however far
        assert memory.recall("ada", "zzzqqq", limit=5, relevant_only=True) == []
        assert [h.memory.id for h in memory.recall("ada", "feline", relevant_only=True)] == [kitten.id]
        assert [h.memory.id for h in memory.recall("ada", "Miso", relevant_only=True)] == [kitten.id]
        # a caller's own floor above the host's is kept ("feline runs": cosine 0.71 to both)
        assert len(memory.recall("ada", "feline runs", relevant_only=True)) == 2
        assert memory.recall("ada", "feline runs", relevant_only=True, min_similarity=0.9) == []


def test_a_memory_close_in_meaning_is_a_duplicate(vector_world: World) -> None:
    with vector_world.client() as memory:
        kitten = memory.remember("ada", "Has a kitten").memory
        again = memory.remember("ada", "Owns cats")
        assert (again.memory.id, again.replaced_id, again.memory.text) == (kitten.id, kitten.id, "Owns cats")
        assert vector_world.count() == 1


def ai_off(world: World) -> None:
    assert world.runtime.tenants.set_ai(world.tenant_a, False)


def test_with_the_ai_off_tools_answer_ai_disabled_and_write_nothing(vector_world: World) -> None:
    with vector_world.client() as memory:
        kept = memory.remember("ada", "Has a kitten").memory
        ai_off(vector_world)
        for name, arguments in (("remember", {"text": "Likes jazz"}), ("recall", {"query": "kitten"}),
                                ("update_memory", {"id": kept.id, "text": "Has two kittens"}), ("forget", {"id": kept.id})):
            answer = memory.call_tool("ada", name, arguments, language="en")
            assert (answer["ok"], answer["code"], answer["reason"]) == (False, "refused", "ai_disabled"), name
        assert [t["function"]["name"] for t in memory.tools()] == ["remember", "recall", "update_memory", "forget"]
        assert [m.text for m in memory.list("ada").items] == ["Has a kitten"]
    with vector_world.client("b") as memory:  # another tenant keeps its AI
        assert memory.call_tool("ada", "remember", {"text": "Likes jazz"})["code"] == "memory_saved"


def test_with_the_ai_off_consolidate_is_422_ai_disabled(vector_world: World) -> None:
    ai_off(vector_world)
    with vector_world.client() as memory, pytest.raises(Refused) as refused:
        memory.consolidate("ada", [{"role": "user", "text": "I have a kitten"}], "conv-1")
    assert (refused.value.status, refused.value.code) == (422, "ai_disabled")
    assert vector_world.count() == 0


def test_with_the_ai_off_every_other_endpoint_still_works(any_vector_world: World) -> None:
    vector_world = any_vector_world
    with vector_world.client() as memory:
        before = memory.remember("ada", "Trains for the marathon").memory
        assert before.has_vector
        ai_off(vector_world)
        kitten = memory.remember("ada", "Has a kitten called Miso", importance=5).memory
        assert not kitten.has_vector  # stored without a vector: the embedder is model-facing
        hits = memory.recall("ada", "kitten")
        assert [(h.memory.id, h.match) for h in hits] == [(kitten.id, "lexical")]
        assert memory.recall("ada", "feline", min_similarity=0.5) == []  # meaning needs the AI
        corrected = memory.update("ada", before.id, text="Trains for the Lyon marathon")
        assert (corrected.revision, corrected.has_vector) == (2, False)
        assert [r.revision for r in memory.history("ada", before.id)] == [2, 1]
        assert memory.undo("ada", before.id) is not None
        assert memory.get("ada", kitten.id).text == "Has a kitten called Miso"
        assert memory.portrait("ada").ids == [kitten.id]
        assert memory.mark_used("ada", [kitten.id]) == 1
        learnt = vector_world.runtime.service.remember(Place("ada", vector_world.tenant_a), "Likes chai",
                                                       channel="background")
        assert [m.id for m in memory.unseen("ada")] == [learnt.memory.id]  # type: ignore[union-attr]
        assert memory.mark_seen("ada", [learnt.memory.id]) == 1  # type: ignore[union-attr]
        assert memory.set_paused("ada", True) and memory.get_settings("ada")
        with pytest.raises(Forbidden) as theirs:  # lifting the pause is the person's
            memory.set_paused("ada", False)
        assert theirs.value.code == "person_decides"
        vector_world.runtime.service.resume(Place("ada", vector_world.tenant_a))
        assert memory.get_settings("ada") is False
        assert len(memory.export("ada").memories) == 3
        memory.forget("ada", kitten.id)
        with pytest.raises(NotFound):
            memory.get("ada", kitten.id)
        assert memory.erase_person("ada").memories == 2
        assert memory.list("ada", state="all").items == []


def test_a_memory_written_with_the_ai_off_gets_its_vector_from_reindex(vector_world: World) -> None:
    with vector_world.client() as memory:
        ai_off(vector_world)
        kitten = memory.remember("ada", "Has a kitten").memory
        assert vector_world.runtime.tenants.set_ai(vector_world.tenant_a, True)
        assert vector_world.runtime.service.reindex() == 1
        assert memory.get("ada", kitten.id).has_vector
        assert [h.match for h in memory.recall("ada", "feline", min_similarity=0.5)] == ["vector"]


def test_the_global_switch_acts_like_the_tenants(make_world: Callable[..., World], sqlite_engine: Any) -> None:
    world = make_world(sqlite_engine, embedder=ConceptEmbedder(), env={"MEMORY_AI_ENABLED": "false"})
    with world.client() as memory:
        assert not memory.remember("ada", "Has a kitten").memory.has_vector
        assert memory.call_tool("ada", "recall", {"query": "kitten"})["reason"] == "ai_disabled"
        with pytest.raises(Refused) as refused:
            memory.consolidate("ada", "I have a kitten", "conv-1")
        assert refused.value.code == "ai_disabled"
