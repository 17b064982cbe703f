"""mem0's own clients as the integrations build them, pinned in their environments: Python
mem0ai 1.0.11 (under agno, AutoGen, CrewAI, LlamaIndex 1.0.0) and npm mem0ai 2.4.6 (under
LangChain.js), each pointed at this server with `host=`, on SQLite and PostgreSQL. (mem0ai 2.2.1
and npm 3.3.1 are proved in tests/api/test_mem0_client.py and test_readme_mem0.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Store, run_flow

pytestmark = pytest.mark.postgres


def test_mem0_python_client_1_0_11(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_mem0ai_1", stores, tmp_path, env="mem0-1")
    for name, store in stores.items():
        assert seen[name] == {
            "add": [["I live in Lyon", "ADD"]],
            "add_other_run": [["I live in Lyon", "ADD"]],
            "get_all": ["I live in Lyon", "I live in Lyon", "I love jazz"],
            "get_all_run": ["I live in Lyon"],
            "search": ["I live in Lyon", "I live in Lyon"],  # "I love jazz" answers nothing of it
            "search_metadata": ["I live in Lyon"],
            "get": ["I live in Lyon", "travel-bot", "trip-1", {"channel": "chat"}],
            "update": "I live in Paris",
            "history": [["ADD", None, "I live in Lyon"], ["UPDATE", "I live in Lyon", "I live in Paris"]],
            "delete": True,
            "after_run_delete": ["I love jazz"],
            "after_delete_all": [],
        }, name
        assert store.texts("ada") == []
