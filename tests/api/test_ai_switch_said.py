"""What the API and the docs say about the AI switch is what it does (issue 27, item 1; DESIGN §6):
the OpenAPI document's descriptions, the problem's detail and the tools' message for
`ai_disabled`, the README and docs/operations.md."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from portal.client import Refused
from portal.domain.catalog import message

from .conftest import World
from .test_ai_and_vectors import ConceptEmbedder

ROOT = Path(__file__).resolve().parents[2]
SAID = "The assistant's AI is switched off for this organisation: it learns nothing from conversations and its " \
       "memory tools are off."


@pytest.fixture
def off(make_world: Callable[..., World], sqlite_engine: Any) -> World:
    world = make_world(sqlite_engine, embedder=ConceptEmbedder())
    assert world.runtime.tenants.set_ai(world.tenant_a, False)
    return world


def described(world: World) -> dict[str, str]:
    document = world.raw().get("/api/v1/openapi.json").get_json()
    return {op["operationId"]: op.get("description", "") for path in document["paths"].values() for op in path.values()}


def test_remember_says_it_stores_without_a_vector_and_does(off: World) -> None:
    assert "without a vector" in described(off)["remember"] and "reindex" in described(off)["remember"]
    embedder = off.runtime.service.embedder
    assert isinstance(embedder, ConceptEmbedder)
    with off.client() as memory:
        saved = memory.remember("ada", "Has a kitten called Miso")
        assert (saved.memory.has_vector, embedder.calls) == (False, 0)


def test_recall_says_it_finds_by_words_and_does(off: World) -> None:
    assert "by their words" in described(off)["recall"]
    with off.client() as memory:
        kitten = memory.remember("ada", "Has a kitten called Miso").memory
        assert [(h.memory.id, h.match) for h in memory.recall("ada", "kitten")] == [(kitten.id, "lexical")]
        assert memory.recall("ada", "feline") == []  # meaning needs the model


def test_consolidate_and_the_tools_say_ai_disabled_in_the_same_words(off: World) -> None:
    assert message("refused.ai_disabled", "en") == SAID
    assert "ai_disabled" in described(off)["consolidate"] and "ai_disabled" in described(off)["call_tool"]
    with off.client() as memory:
        with pytest.raises(Refused) as refused:
            memory.consolidate("ada", "I have a kitten", "conv-1")
        assert (refused.value.code, refused.value.detail) == ("ai_disabled", SAID)
        answer = memory.call_tool("ada", "remember", {"text": "Has a kitten"}, language="en")
        assert (answer["reason"], answer["message"]) == ("ai_disabled", SAID)
        assert memory.list("ada").items == []
    later = off.raw().post("/api/v1/people/ada/consolidate", headers=off.auth(),
                           json={"transcript": "I have a kitten", "ref": "conv-2", "wait": False})
    assert (later.status_code, later.get_json()["code"], later.get_json()["detail"]) == (422, "ai_disabled", SAID)


def test_the_readme_and_the_operations_guide_say_the_same() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    bullet = re.search(r"- \*\*The AI can be switched off\*\*.*?(?=\n- \*\*)", readme, flags=re.S)
    section = re.search(r"\n## The AI switch\n.*?(?=\n## )", operations, flags=re.S)
    assert bullet and section
    for text in (bullet.group(0), section.group(0)):
        flat = " ".join(text.split())
        for claim in ("MEMORY_AI_ENABLED", "without a vector", "by their words", "reindex", "consolidat",
                      "model tools", "ai_disabled", "pause"):
            assert claim in flat, claim
