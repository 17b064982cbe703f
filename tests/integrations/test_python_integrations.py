"""mem0's Python integrations, each its own published package pinned (tests/integrations/envs),
pointed at this server by the line the README shows, on SQLite and PostgreSQL: each one's typical
flow as a team using it runs it (flows/*.py), what it saw compared with what that team needs.
What is added with inference is learnt by the fake model (the person's side of the conversation)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Store, run_flow

pytestmark = pytest.mark.postgres


def test_agno_mem0_tools(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_agno", stores, tmp_path, env="mem0-1")
    for name, store in stores.items():
        assert seen[name] == {
            "add": True,
            "get_all": ["I live in Lyon", '{"likes": "jazz"}'],
            "search": "I live in Lyon",
            "delete_all": True,
            "after_delete_all": [],
        }, name
        assert store.texts("ada") == []


def test_autogen_mem0_memory(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_autogen", stores, tmp_path, env="mem0-1")
    for name, store in stores.items():
        assert seen[name] == {
            "query": ["I live in Lyon"],
            "top": ["I live in Lyon", "home", True],
            "update_context": 1,
            "after_clear": [],
        }, name
        assert store.texts("ada") == []


def test_crewai_mem0_storage(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_crewai", stores, tmp_path, env="mem0-1")
    for name, store in stores.items():
        assert seen[name] == {
            # CrewAI keeps only hits scoring at least 0.6: the best one must
            "short_search": [["Ada lives in Lyon", "short_term", "crew-run-1"]],
            "other_run_search": [["Ada lives in Lyon", "crew-run-2"]],
            "entity_search": [["Ada's sister is Grace", "entity"]],
            "after_reset": [],
        }, name
        assert store.texts("ada") == []


def test_llamaindex_1_0_0_from_client(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_llamaindex_1", stores, tmp_path, env="mem0-1")
    for name, store in stores.items():
        assert seen[name] == {
            "get": [True, False],  # ada's memory, never bob's, though bob talks to the same agent
            "search": ["I live in Lyon"],
            "history": ["I live in Lyon", "Lyon is lovely."],
        }, name
        assert store.texts("ada") == ["I live in Lyon"] and store.texts("bob") == ["I live in Berlin"]


def test_llamaindex_2_1_0_with_a_client_of_its_own(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_llamaindex_2", stores, tmp_path, env="mem0-2")
    for name, store in stores.items():
        assert seen[name] == {
            "from_client": True,  # its from_client passes org_id to mem0ai 2.x: docs/operations.md says so
            "get": True,
            "search": ["I live in Lyon"],
        }, name
        assert store.texts("ada") == ["I live in Lyon"]


def test_mem0_mcp_server(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_mcp_server", stores, tmp_path, env="mem0-2")
    for name, store in stores.items():
        assert seen[name] == {
            "add": True,
            "get_memories": ["I live in Lyon", "I love jazz"],
            "search": ["I live in Lyon"],
            "search_agent": ["I live in Lyon"],
            # Every memory here is a person's: agent, app and run ids are scopes inside a person's
            # memories, not entities of their own (docs/operations.md "mem0's API").
            "list_entities": [["user", "ada"]],
            "get_memory": "I live in Lyon",
            "updated": "I live in Paris",
            "after_delete": ["I love jazz"],
            "after_delete_all": [],
            "delete_entities": True,
        }, name
        assert store.texts("ada") == [] and store.texts("bob") == []


def test_haystack_mem0_components(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_haystack", stores, tmp_path, env="mem0-2")
    for name, store in stores.items():
        assert seen[name] == {
            "list": ["I live in Lyon", "I love jazz"],
            "search": ["I live in Lyon"],
            "search_run": ["I love jazz"],
            "search_metadata": [["I play chess", "games"]],
        }, name
        assert store.texts("ada") == ["I live in Lyon", "I love jazz", "I play chess"]


def test_agent_framework_mem0_context_provider(stores: dict[str, Store], tmp_path: Path) -> None:
    seen = run_flow("flow_agent_framework", stores, tmp_path, env="mem0-2")
    for name, store in stores.items():
        assert seen[name] == {"before_run": True, "assistant_kept": False}, name
        assert store.texts("ada") == ["I live in Lyon"]
