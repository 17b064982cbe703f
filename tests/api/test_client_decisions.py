"""Issue 29 through the Python client: `conversation_ref` on recall, portrait and tool calls,
`expires_at` on remember and update (and in `Memory`), and `set_use` / `update(use=...)`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from portal.client import NotFound, Refused
from portal.domain.types import Place

from .conftest import World


def conversation_count(world: World) -> int:
    return len(world.runtime.service.conversations(Place("ada", world.tenant_a)))


def test_the_client_names_the_conversation_on_recall_portrait_and_tools(any_world: World) -> None:
    with any_world.client() as memory:
        tea = memory.remember("ada", "Prefers tea to coffee", pinned=True).memory
        assert [h.memory.id for h in memory.recall("ada", "tea", conversation_ref="c-1")] == [tea.id]
        assert memory.portrait("ada", conversation_ref="c-2").ids == [tea.id]
        called = memory.call_tool("ada", "recall", {"query": "tea"}, conversation_ref="c-3")
        assert [m["id"] for m in called["memories"]] == [tea.id]
        assert conversation_count(any_world) == 3
        for bad in ("", "x" * 201):
            with pytest.raises(Refused) as refused:
                memory.recall("ada", "tea", conversation_ref=bad)
            assert refused.value.code == "invalid_conversation_ref"
        with pytest.raises(Refused):
            memory.portrait("ada", conversation_ref="x" * 201)
        with pytest.raises(Refused):
            memory.call_tool("ada", "recall", {"query": "tea"}, conversation_ref="x" * 201)
    assert conversation_count(any_world) == 3


def test_the_client_sets_keeps_and_clears_an_expiry(world: World) -> None:
    when = datetime(2099, 3, 4, 5, 6, 7, tzinfo=UTC)
    with world.client() as memory:
        made = memory.remember("ada", "Is in Lyon this week", expires_at=when).memory
        assert made.expires_at == when and made.use is True
        assert memory.get("ada", made.id).expires_at == when
        assert memory.update("ada", made.id, importance=5).expires_at == when  # left out: kept
        assert memory.update("ada", made.id, expires_at="2098-01-01T00:00:00Z").expires_at == datetime(
            2098, 1, 1, tzinfo=UTC)
        assert memory.update("ada", made.id, expires_at=None).expires_at is None
        with pytest.raises(Refused) as refused:
            memory.remember("ada", "Was in Paris", expires_at=datetime.now(UTC) - timedelta(days=1))
        assert refused.value.code == "expiry_in_past"
        with pytest.raises(Refused) as refused:
            memory.update("ada", made.id, expires_at=datetime(2099, 1, 1))  # no time zone
        assert refused.value.code == "invalid_expiry"


def test_set_use_false_hides_a_memory_from_every_app_and_true_changes_nothing(world: World) -> None:
    with world.client() as memory, world.client("a_read") as other:
        made = memory.remember("ada", "Prefers tea to coffee", pinned=True).memory
        assert memory.set_use("ada", made.id, False).use is False
        for app in (memory, other):
            with pytest.raises(NotFound):
                app.get("ada", made.id)
            assert app.recall("ada", "tea") == [] and app.portrait("ada").ids == []
        with pytest.raises(NotFound):
            memory.set_use("ada", made.id, True)  # it cannot see it any more: only the person allows it
        fresh = memory.remember("ada", "Has a cat").memory
        changed = memory.update("ada", fresh.id, text="Has two cats", use=False)
        assert (changed.text, changed.use, changed.revision) == ("Has two cats", False, 2)
    place = Place("ada", world.tenant_a)
    assert {m.id: m.to_json()["use"] for m in world.runtime.service.list(place).items} == {made.id: False,
                                                                                           fresh.id: False}
