"""One place's recall index answers each asker from the memories it may receive, call after call:
expiries passing between two calls on the same index, and apps withheld from differently, each
get their own answer (what the index remembers per asker never serves another)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from portal.domain.recall.index import Entry, PlaceIndex
from portal.domain.types import Embedding
from portal.ports import Filters

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entry(name: str, expires: int | None = None, withheld: tuple[str, ...] = ()) -> Entry:
    vector = np.ones(4, dtype=np.float32)
    return Entry(name, "fact", T0, ("kayak",), Embedding("m", vector),
                 expires_at=None if expires is None else T0 + timedelta(seconds=expires), withheld=withheld)


def seen(index: PlaceIndex, filters: Filters) -> set[str]:
    query = Embedding("m", np.ones(4, dtype=np.float32))
    by_meaning = {i for i, _ in index.nearest(query, 10, filters)}
    by_words = {i for i, _ in index.search_words("kayak", 10, filters)}
    assert by_meaning == by_words
    return by_meaning


def test_each_expiry_passing_between_calls_is_seen_at_the_next() -> None:
    index = PlaceIndex("t", [entry("a"), entry("b", expires=10), entry("c", expires=20), entry("d", expires=20)])
    at = lambda s: Filters(alive_at=T0 + timedelta(seconds=s))  # noqa: E731
    assert seen(index, at(9)) == {"a", "b", "c", "d"}
    assert seen(index, at(10)) == {"a", "c", "d"}
    assert seen(index, at(19.5)) == {"a", "c", "d"}
    assert seen(index, at(20)) == {"a"}
    assert seen(index, at(5)) == {"a", "b", "c", "d"}  # an earlier moment (another worker's clock)


def test_apps_withheld_from_differently_never_share_an_answer() -> None:
    index = PlaceIndex("t", [entry("a"), entry("b", withheld=("app-1",)), entry("c", withheld=("*",)),
                             entry("d", expires=10, withheld=("app-2",))])
    alive = Filters(alive_at=T0, app="app-1")
    assert seen(index, alive) == {"a", "d"}
    assert seen(index, Filters(alive_at=T0, app="app-2")) == {"a", "b"}
    assert seen(index, Filters(alive_at=T0 + timedelta(seconds=10), app="app-1")) == {"a"}
    assert seen(index, Filters(alive_at=T0, app="app-3")) == {"a", "b", "d"}
    assert seen(index, Filters()) == {"a", "b", "c", "d"}  # the person: everything
    for n in range(128):  # many askers: each still gets its own answer
        assert seen(index, Filters(alive_at=T0, app=f"other-{n}")) == {"a", "b", "d"}
    assert seen(index, alive) == {"a", "d"}


def test_a_view_keeps_each_models_vectors_to_their_own_memories() -> None:
    def made(name: str, model: str | None, x: float, withheld: tuple[str, ...] = (), kind: str = "fact") -> Entry:
        vector = np.array([x, 1.0, 0.0, 0.0], dtype=np.float32)
        return Entry(name, kind, T0, ("kayak",), Embedding(model, vector) if model else None, withheld=withheld)

    index = PlaceIndex("t", [made("a", "m", 0.1), made("b", "n", 0.2, ("app-1",)), made("c", None, 0.0),
                             made("d", "m", 0.3, ("app-1",)), made("e", "n", 0.4), made("f", "m", 0.5),
                             made("g", "m", 0.6, kind="event")])
    query = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    view = Filters(alive_at=T0, app="app-1")
    # Nearest first by the first coordinate: each model's own memories, without the withheld ones.
    assert [i for i, _ in index.nearest(Embedding("m", query), 10, view)] == ["g", "f", "a"]
    facts = Filters(alive_at=T0, app="app-1", kinds=("fact",))
    assert [i for i, _ in index.nearest(Embedding("m", query), 10, facts)] == ["f", "a"]
    assert [i for i, _ in index.search_words("kayak", 10, facts)] == ["a", "c", "e", "f"]
    assert [i for i, _ in index.nearest(Embedding("n", query), 10, view)] == ["e"]
    assert [i for i, _ in index.nearest(Embedding("m", query), 10, Filters())] == ["g", "f", "d", "a"]
    found, unknown = index.view_for(view).embeddings(["a", "b", "c", "d", "e", "f", "g"])
    assert sorted(found) == ["a", "e", "f", "g"] and float(found["f"].vector[0]) == 0.5
    mean = index.mean_vector("m", 4, facts)
    assert mean is not None and abs(float(mean[0]) - np.mean([0.1 / np.hypot(0.1, 1), 0.5 / np.hypot(0.5, 1)])) < 1e-6
