"""Listing (DESIGN §5): newest first, keyset pagination, filters, unseen and seen marks."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta

import pytest

from portal.domain.options import Options
from portal.domain.types import InvalidArgument

from .conftest import FakeClock, remember_ok


def _all_pages(service, place, limit, **filters):
    seen, pages, cursor = [], 0, None
    while True:
        page = service.list(place, limit=limit, cursor=cursor, **filters)
        pages += 1
        seen.extend(page.items)
        if page.next_cursor is None:
            return seen, pages
        cursor = page.next_cursor
        assert pages < 100, "pagination does not end"


def test_newest_first(words_only, place):
    a = remember_ok(words_only, place, "Note alpha")
    b = remember_ok(words_only, place, "Note bravo")
    c = remember_ok(words_only, place, "Note charlie")
    page = words_only.list(place)
    assert [m.id for m in page.items] == [c.id, b.id, a.id]
    assert page.next_cursor is None


def test_pagination_over_120_returns_each_exactly_once_newest_first(words_only, place):
    ids = [remember_ok(words_only, place, f"Note number{i}").id for i in range(120)]
    items, pages = _all_pages(words_only, place, limit=50)
    assert pages == 3
    assert [m.id for m in items] == list(reversed(ids))


def test_pagination_with_equal_creation_times(make_service, place):
    frozen = make_service(embedder=None, clock=FakeClock(tick=timedelta(0)))
    ids = {remember_ok(frozen, place, f"Note number{i}").id for i in range(120)}
    items, pages = _all_pages(frozen, place, limit=50)
    assert pages == 3
    assert len(items) == 120 and {m.id for m in items} == ids


def test_pagination_is_stable_when_memories_arrive_between_pages(words_only, place):
    for i in range(10):
        remember_ok(words_only, place, f"Note number{i}")
    first = words_only.list(place, limit=4)
    newcomer = remember_ok(words_only, place, "Arrived while reading")
    rest, _ = _all_pages_from(words_only, place, 4, first.next_cursor)
    listed = [m.id for m in first.items + rest]
    assert len(listed) == 10 and len(set(listed)) == 10
    assert newcomer.id not in listed


def _all_pages_from(service, place, limit, cursor):
    out, pages = [], 0
    while cursor:
        page = service.list(place, limit=limit, cursor=cursor)
        out.extend(page.items)
        cursor = page.next_cursor
        pages += 1
    return out, pages


def _b64(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    ["garbage!!", "abc", "%%%", "eyJ", "////", _b64("just a string"), _b64(["2025-01-01T00:00:00", "id"]),
     _b64(["not a date", "id"]), _b64(["2025-01-01T00:00:00Z", 5]), _b64(["2025-01-01T00:00:00Z", "id", "x"]),
     _b64({"a": 1})],
)
def test_a_bad_cursor_is_invalid_cursor(words_only, place, cursor):
    remember_ok(words_only, place, "Note alpha")
    with pytest.raises(InvalidArgument) as caught:
        words_only.list(place, cursor=cursor)
    assert caught.value.code == "invalid_cursor"


@pytest.mark.parametrize("value", [[1, "id"], [None, "id"]])
def test_a_cursor_with_a_non_text_date_is_invalid_cursor(words_only, place, value):
    with pytest.raises(InvalidArgument) as caught:
        words_only.list(place, cursor=_b64(value))
    assert caught.value.code == "invalid_cursor"


@pytest.mark.parametrize("moment", [datetime(2026, 1, 1, 9, 0), "2026-01-01T09:00:00Z", 1767258000])
def test_a_time_filter_without_its_zone_is_invalid_time(words_only, place, moment):
    remember_ok(words_only, place, "Note alpha")
    for call in (
        lambda: words_only.list(place, created_after=moment),
        lambda: words_only.list(place, created_before=moment),
        lambda: words_only.recall(place, "alpha", after=moment),
        lambda: words_only.recall(place, "alpha", before=moment),
    ):
        with pytest.raises(InvalidArgument) as caught:
            call()
        assert caught.value.code == "invalid_time"


@pytest.mark.parametrize("limit", [0, -5, 201, "50", None, 2.0])
def test_a_page_size_out_of_range_is_invalid_limit(words_only, place, limit):
    with pytest.raises(InvalidArgument) as caught:
        words_only.list(place, limit=limit)
    assert caught.value.code == "invalid_limit"


def test_an_unknown_state_is_invalid_state(words_only, place):
    with pytest.raises(InvalidArgument) as caught:
        words_only.list(place, state="deleted")
    assert caught.value.code == "invalid_state"


def test_state_filters(make_service, place):
    service = make_service(options=Options(max_active=2), embedder=None)
    old = remember_ok(service, place, "Note alpha")
    b = remember_ok(service, place, "Note bravo")
    c = remember_ok(service, place, "Note charlie")
    assert [m.id for m in service.list(place).items] == [c.id, b.id]
    assert [m.id for m in service.list(place, state="archived").items] == [old.id]
    assert [m.id for m in service.list(place, state="all").items] == [c.id, b.id, old.id]
    assert [m.id for m in service.list(place, state=None).items] == [c.id, b.id, old.id]


def test_kinds_and_creation_time_filters(words_only, place, clock):
    goal = remember_ok(words_only, place, "Run a marathon", kind="goal")
    clock.advance(days=2)
    since = clock.now
    pref = remember_ok(words_only, place, "Prefers tea", kind="preference")
    fact = remember_ok(words_only, place, "Lives in Lyon", kind="fact")
    assert [m.id for m in words_only.list(place, kinds=["goal"]).items] == [goal.id]
    assert {m.id for m in words_only.list(place, kinds=["goal", "fact"]).items} == {goal.id, fact.id}
    assert [m.id for m in words_only.list(place, created_after=since - timedelta(seconds=1)).items] == [fact.id, pref.id]
    assert [m.id for m in words_only.list(place, created_before=since).items] == [goal.id]


def test_unseen_until_marked_seen(words_only, place):
    learnt = remember_ok(words_only, place, "Learnt in the background", channel="background")
    said = remember_ok(words_only, place, "Said by the person")
    assert learnt.seen is False and said.seen is True
    assert [m.id for m in words_only.list_unseen(place)] == [learnt.id]
    assert [m.id for m in words_only.list(place, channel="background", seen=False).items] == [learnt.id]
    assert words_only.mark_seen(place, [learnt.id, said.id, "unknown"]) == 1
    assert words_only.list_unseen(place) == []
    assert words_only.mark_seen(place, [learnt.id]) == 0
    assert [m.id for m in words_only.list(place, channel="background", seen=True).items] == [learnt.id]
    assert words_only.get(place, learnt.id).channel == "background"


@pytest.mark.parametrize("ids", ["an-id", None, 42])
def test_marks_need_a_list_of_ids(words_only, place, ids):
    with pytest.raises(InvalidArgument) as caught:
        words_only.mark_seen(place, ids)
    assert caught.value.code == "invalid_ids"
    with pytest.raises(InvalidArgument):
        words_only.mark_used(place, ids)


def test_mark_used_counts_only_active_known_ids(make_service, place, clock):
    service = make_service(options=Options(max_active=1), embedder=None)
    archived = remember_ok(service, place, "Note alpha")
    active = remember_ok(service, place, "Note bravo")
    assert service.mark_used(place, [active.id, active.id, archived.id, "unknown", 7]) == 1
    assert service.get(place, active.id).last_used_at is not None
    assert service.get(place, archived.id).last_used_at is None
