"""Memory endpoints through the client: remember, list, get, correct, undo, forget, history —
each happy path and each error status it can give."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from portal.client import Conflict, Forbidden, NotFound, Refused
from portal.domain.types import Place

from .conftest import World


def test_remember_answers_201_with_the_memory_in_its_public_shape(any_world: World) -> None:
    with any_world.client() as memory:
        saved = memory.remember("ada", "**Prefers** tea   to coffee", kind="Préférence", importance="high",
                                pinned=True)
        assert memory.last_response is not None and memory.last_response.status_code == 201
    m = saved.memory
    assert (m.text, m.kind, m.importance, m.pinned, m.revision) == ("Prefers tea to coffee", "preference", 4, True, 1)
    assert (m.origin, m.channel, m.seen, m.state, m.has_vector) == ("asserted", "foreground", True, "active", False)
    assert [s.kind for s in m.sources] == ["api"]
    assert m.created_at.tzinfo is not None and abs(datetime.now(UTC) - m.created_at).total_seconds() < 60
    assert (saved.replaced_id, saved.reinforced, saved.replayed) == (None, False, False)


def test_a_known_kind_is_kept_and_importance_is_rounded_and_clamped(world: World) -> None:
    with world.client() as memory:
        m = memory.remember("ada", "Wants to run the Lyon marathon", kind="GOAL", importance="4.6").memory
        assert (m.kind, m.importance) == ("goal", 5)
        assert memory.remember("ada", "Has a cat", importance=-3).memory.importance == 1


def test_a_duplicate_is_replaced_or_reinforced_under_the_same_id(world: World) -> None:
    with world.client() as memory:
        first = memory.remember("ada", "Prefers tea to coffee", importance=2).memory
        replaced = memory.remember("ada", "prefers TEA to coffee!")
        assert (replaced.memory.id, replaced.replaced_id, replaced.memory.revision) == (first.id, first.id, 2)
        reinforced = memory.remember("ada", "Prefers tea to coffee", importance=5, on_duplicate="reinforce")
        assert reinforced.reinforced and reinforced.memory.id == first.id
        assert (reinforced.memory.revision, reinforced.memory.importance) == (2, 5)
        assert world.count() == 1


@pytest.mark.parametrize(
    ("text", "code"),
    [("   ", "empty"), ("**``**", "empty"), ("x" * 501, "too_long"), ("My password is hunter2", "secret")],
)
def test_remember_refusals_are_422_with_the_code_and_keep_nothing(world: World, text: str, code: str) -> None:
    with world.client() as memory, pytest.raises(Refused) as refused:
        memory.remember("ada", text)
    assert (refused.value.status, refused.value.code) == (422, code)
    assert world.count() == 0


def test_a_content_rule_allowing_explicit_requests_still_refuses_without_it(world: World) -> None:
    # The rule file of the test world has no allow_when_explicit: explicit does not bypass it.
    with world.client() as memory, pytest.raises(Refused):
        memory.remember("ada", "Her pin code is 1234", explicit=True)


def test_remember_while_paused_is_refused_and_correcting_still_works(world: World) -> None:
    with world.client() as memory:
        kept = memory.remember("ada", "Lives in Lyon").memory
        assert memory.set_paused("ada", True) is True
        with pytest.raises(Refused) as refused:
            memory.remember("ada", "Lives in Paris")
        assert refused.value.code == "paused"
        assert memory.update("ada", kept.id, text="Lives in Paris").text == "Lives in Paris"
        with pytest.raises(Forbidden) as theirs:  # lifting the pause is the person's
            memory.set_paused("ada", False)
        assert theirs.value.code == "person_decides"
        world.runtime.service.resume(Place("ada", world.tenant_a))
        assert memory.get_settings("ada") is False
        assert memory.remember("ada", "Has a dog").memory.text == "Has a dog"


def test_list_filters_and_pages_newest_first(world: World) -> None:
    with world.client() as memory:
        made = [memory.remember("ada", f"Fact number {i}", kind="goal" if i % 2 else "fact").memory for i in range(7)]
        first = memory.list("ada", limit=3)
        assert [m.id for m in first.items] == [m.id for m in reversed(made)][:3]
        assert first.next_cursor
        rest = memory.list("ada", limit=3, cursor=first.next_cursor)
        assert [m.id for m in rest.items] == [m.id for m in reversed(made)][3:6]
        assert [m.id for m in memory.iter_memories("ada", page_size=2)] == [m.id for m in reversed(made)]
        assert {m.kind for m in memory.list("ada", kind="goal").items} == {"goal"}
        assert len(memory.list("ada", kind="goal").items) == 3
        assert memory.list("ada", channel="background").items == []
        assert len(memory.list("ada", seen=True, state="all").items) == 7
        assert memory.list("nobody").items == [] and memory.list("nobody").next_cursor is None


def test_get_answers_the_memory_with_its_revision_as_etag(world: World) -> None:
    with world.client() as memory:
        m = memory.remember("ada", "Lives in Lyon").memory
        memory.update("ada", m.id, text="Lives in Paris")
        got = memory.get("ada", m.id)
        assert (got.id, got.revision, got.text) == (m.id, 2, "Lives in Paris")
        assert memory.last_response is not None and memory.last_response.headers["ETag"] == '"2"' == got.etag


def test_update_makes_a_new_revision_and_keeps_what_is_not_given(world: World) -> None:
    with world.client() as memory:
        m = memory.remember("ada", "Lives in Lyon", kind="fact", importance=4).memory
        updated = memory.update("ada", m.id, text="Lives in Paris", if_revision=1)
        assert (updated.id, updated.revision, updated.kind, updated.importance) == (m.id, 2, "fact", 4)
        assert memory.last_response is not None and memory.last_response.headers["ETag"] == '"2"'
        pinned = memory.update("ada", m.id, pinned=True)
        assert pinned.pinned and pinned.revision == 2  # pinning is no new revision
        assert [r.text for r in memory.history("ada", m.id)] == ["Lives in Paris", "Lives in Lyon"]


def test_a_stale_if_match_is_409_with_the_actual_revision_and_changes_nothing(world: World) -> None:
    with world.client() as memory:
        m = memory.remember("ada", "Lives in Lyon").memory
        memory.update("ada", m.id, text="Lives in Paris")
        with pytest.raises(Conflict) as conflict:
            memory.update("ada", m.id, text="Lives in Nice", if_revision=1)
        assert (conflict.value.status, conflict.value.code, conflict.value.actual_revision) == (409, "conflict", 2)
        assert memory.get("ada", m.id).text == "Lives in Paris"


def test_update_in_place_keeps_no_earlier_text_and_leaves_nothing_to_undo(world: World) -> None:
    with world.client() as memory:
        m = memory.remember("ada", "Had surgery on her left knee in May").memory
        memory.update("ada", m.id, text="Had surgery in May", in_place=True)
        history = memory.history("ada", m.id)
        assert [r.text for r in history] == ["Had surgery in May"]
        with pytest.raises(Refused) as refused:
            memory.undo("ada", m.id)
        assert refused.value.code == "nothing_to_undo"
        exported = memory.export("ada")
        assert "left knee" not in str(exported.memories)


@pytest.mark.parametrize(("text", "code"), [("", "empty"), ("y" * 501, "too_long"), ("Her password is x", "secret")])
def test_update_refusals_are_422_and_keep_the_memory(world: World, text: str, code: str) -> None:
    with world.client() as memory:
        m = memory.remember("ada", "Lives in Lyon").memory
        with pytest.raises(Refused) as refused:
            memory.update("ada", m.id, text=text)
        assert refused.value.code == code
        assert memory.get("ada", m.id).text == "Lives in Lyon"


def test_undo_removes_a_new_memory_and_restores_an_earlier_wording(world: World) -> None:
    with world.client() as memory:
        fresh = memory.remember("ada", "Likes jazz").memory
        assert memory.undo("ada", fresh.id) is None
        with pytest.raises(NotFound):
            memory.get("ada", fresh.id)
        m = memory.remember("ada", "Lives in Lyon").memory
        memory.update("ada", m.id, text="Lives in Paris")
        restored = memory.undo("ada", m.id)
        assert restored is not None and (restored.text, restored.revision) == ("Lives in Lyon", 3)
        with pytest.raises(Refused) as refused:
            memory.undo("ada", m.id)
        assert (refused.value.status, refused.value.code) == (422, "nothing_to_undo")
        assert memory.get("ada", m.id).text == "Lives in Lyon"


def test_forget_is_204_then_404_and_leaves_nothing(world: World) -> None:
    with world.client() as memory:
        m = memory.remember("ada", "Lives in Lyon").memory
        memory.update("ada", m.id, text="Lives in Paris")
        memory.forget("ada", m.id)
        assert memory.last_response is not None and memory.last_response.status_code == 204
        assert memory.last_response.content == b""
        for call in (memory.forget, memory.get, memory.history, memory.undo):
            with pytest.raises(NotFound) as missing:
                call("ada", m.id)
            assert (missing.value.status, missing.value.code) == (404, "not_found")
        assert "Lyon" not in str(memory.export("ada").memories)
        # A remembered text again is a new memory with a new id: the tombstone keeps the old one dead.
        again = memory.remember("ada", "Lives in Lyon").memory
        assert again.id != m.id


@pytest.mark.parametrize("memory_id", ["0" * 32, "nope", "x" * 200])
def test_unknown_ids_are_404_on_every_memory_endpoint(world: World, memory_id: str) -> None:
    with world.client() as memory:
        calls = [lambda: memory.get("ada", memory_id), lambda: memory.history("ada", memory_id),
                 lambda: memory.update("ada", memory_id, text="x"), lambda: memory.undo("ada", memory_id),
                 lambda: memory.forget("ada", memory_id)]
        for call in calls:
            with pytest.raises(NotFound):
                call()


def test_history_is_newest_first_with_aware_times(world: World) -> None:
    with world.client() as memory:
        m = memory.remember("ada", "Lives in Lyon").memory
        memory.update("ada", m.id, text="Lives in Paris")
        memory.update("ada", m.id, text="Lives in Nice")
        history = memory.history("ada", m.id)
        assert [(r.revision, r.text) for r in history] == [(3, "Lives in Nice"), (2, "Lives in Paris"), (1, "Lives in Lyon")]
        assert all(r.written_at.tzinfo is not None and r.id == m.id for r in history)
        assert history[0].written_at >= history[-1].written_at


def test_naming_another_person_of_the_tenant_is_refused_other_person(world: World) -> None:
    world.runtime.accounts.create("paul@example.com", "Paul", world.tenant_a, "member", "a long enough password",
                                  owner_id="paul")
    with world.client() as memory:
        with pytest.raises(Refused) as refused:
            memory.remember("ada", "Had lunch with paul on Friday")
        assert (refused.value.status, refused.value.code) == (422, "other_person")
        kept = memory.remember("ada", "Had lunch with Pauline on Friday").memory  # a whole word only
        with pytest.raises(Refused) as edit:
            memory.update("ada", kept.id, text="Had lunch with Paul on Friday")
        assert edit.value.code == "other_person"
        assert memory.remember("paul", "Is called Paul").memory.text == "Is called Paul"  # his own name
    with world.client("b") as memory:  # names belong to their tenant
        assert memory.remember("ada", "Had lunch with Paul on Friday").memory
    assert world.count() == 1
