"""Issue 27, item 15: the Python client's recall answers the closest memories however far they are
(a score near 0 for a query about nothing the person said); `relevant_only=True` asks for relevant
ones only. The client passes it to the real app, and its docstring and the README say so."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from portal.client import MemoryClient

from .conftest import World, serving
from .test_ai_and_vectors import ConceptEmbedder

README = Path(__file__).resolve().parents[2] / "README.md"


def test_relevant_only_through_the_client_against_the_real_app(make_world: Callable[..., World],
                                                               sqlite_engine: Any) -> None:
    world = make_world(sqlite_engine, embedder=ConceptEmbedder())
    with world.client() as memory:
        kitten = memory.remember("ada", "Has a kitten called Miso").memory
        memory.remember("ada", "Trains for the marathon")
        unrelated = memory.recall("ada", "quantum chromodynamics")
        assert len(unrelated) == 2  # the closest, however far
        assert memory.recall("ada", "quantum chromodynamics", relevant_only=True) == []
        assert [h.memory.id for h in memory.recall("ada", "feline", relevant_only=True)] == [kitten.id]
        sent = memory.last_response
        assert sent is not None and b'"relevant_only":true' in sent.request.content.replace(b" ", b"")


def test_the_client_docstring_says_how_to_ask_for_relevant_ones_only() -> None:
    doc = inspect.getdoc(MemoryClient.recall) or ""
    assert "relevant_only=True" in doc and "score" in doc


def test_the_readme_s_python_snippet_runs_as_printed(world: World) -> None:
    readme = README.read_text(encoding="utf-8")
    found = re.search(r"```python\n(from portal\.client import MemoryClient\n.*?)```", readme, flags=re.S)
    assert found, "README shows no Python client"
    snippet = found.group(1)
    assert "relevant_only=True" in snippet
    with serving(world) as base:
        names: dict[str, Any] = {"KEY": world.keys["a"]}
        exec(compile(snippet.replace("http://127.0.0.1:8000", base), "README.md", "exec"), names)  # noqa: S102
    assert [h.memory.text for h in names["hits"]] == ["Prefers short answers"]
    assert names["nothing"] == []
    assert (names["portrait"].text, names["portrait"].left_out) == ("- Prefers short answers", 0)
