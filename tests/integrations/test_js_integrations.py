"""mem0's JavaScript integrations, pinned in tests/integrations/npm (package-lock.json), pointed at
this server by the line the README shows, on SQLite and PostgreSQL: npm mem0ai 2.4.6 (the client
LangChain.js builds), LangChain.js's Mem0Memory, and the Vercel AI SDK provider 3.0.2 and 2.0.6."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Store, run_flow

pytestmark = pytest.mark.postgres


def test_mem0_typescript_client_2_4_6(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_mem0ai_2", stores, tmp_path)
    for name, store in stores.items():
        assert seen[name] == {
            "add": [["I live in Lyon", "ADD"]],
            "getAll": ["I live in Lyon", "I love jazz"],  # v1 list: a JSON array
            "search": ["I live in Lyon"],
            "searchV2": ["I love jazz"],
            "get": ["I live in Lyon", "travel-bot", "trip-1", {"channel": "chat"}],
            "update": "I live in Paris",
            "history": [["ADD", None, "I live in Lyon"], ["UPDATE", "I live in Lyon", "I live in Paris"]],
            "afterDeleteAll": [],
        }, name
        assert store.texts("ada") == []


def test_langchain_js_mem0_memory(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_langchain", stores, tmp_path)
    for name, store in stores.items():
        assert seen[name] == {"history": ["I live in Lyon", "I love jazz"], "recalled": True}, name
        assert "I live in Lyon" in store.texts("ada")


def test_vercel_ai_provider_3_0_2_and_2_0_6(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_vercel", stores, tmp_path)
    for name, store in stores.items():
        assert seen[name] == {
            f"{v}.{what}": value for v in ("v3", "v2") for what, value in (
                ("getMemories", ["I live in Lyon"]), ("retrieveMemories", True), ("searchMemories", ["I live in Lyon"]))
        }, name
        assert store.texts("ada-v3") == ["I live in Lyon"] and store.texts("ada-v2") == ["I live in Lyon"]
