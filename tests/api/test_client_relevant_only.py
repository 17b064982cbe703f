"""Issue 27, item 15: the Python client's recall answers the closest memories however far they are
(a score near 0 for a query about nothing the person said); `relevant_only=True` asks for relevant
ones only. The client passes it to the real app, and its docstring and the README say so."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from portal.client import MemoryClient

from ..readme import free_port, fresh_shell_env, make_run, readme_block, shell
from .conftest import World
from .test_ai_and_vectors import ConceptEmbedder

SECTION, SERVER = "The JSON API in five minutes", "http://127.0.0.1:8000"
# Appended to the README's block: what it found.
REPORT = """
import json as _json
print(_json.dumps({"hits": [h.memory.text for h in hits], "nothing": nothing,
                   "portrait": [portrait.text, portrait.left_out]}))
"""


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


def test_the_readme_s_python_client_block_runs_as_pasted_after_its_shell_lines(tmp_path: Path) -> None:
    """As a reader pastes it: its shell lines in a fresh shell in the clone while `make run` is up,
    then the block as a file run from that shell (only make run's address is replaced)."""
    setup = readme_block(SECTION, "sh", "portal.client")
    block = readme_block(SECTION, "python", "from portal.client import MemoryClient")
    assert setup.startswith(". .venv/bin/activate") and "relevant_only=True" in block and SERVER in block
    env = fresh_shell_env(tmp_path, tmp_path / "instance")
    with make_run(env, free_port()) as server:
        app = tmp_path / "app.py"
        app.write_text(block.replace(SERVER, server) + REPORT, encoding="utf-8")
        ran = shell(f"{setup}\npython {app}\n", env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    report = json.loads(ran.stdout.strip().splitlines()[-1])
    assert report == {"hits": ["Prefers short answers"], "nothing": [], "portrait": ["- Prefers short answers", 0]}
