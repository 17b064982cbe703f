"""Import (DESIGN §13): our export comes back as it went, on SQLite and on PostgreSQL — kinds,
importance, pins, origins, channel, state, times and every earlier revision — mem0's JSON and a
plain list of lines are read too, every memory passes the checks every write runs, and the same
file twice adds nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from portal.adapters.sql.store import SqlStore
from portal.domain.audit import AuditNote
from portal.domain.errors import Refused
from portal.domain.export import document
from portal.domain.imports import parse
from portal.domain.types import Place, Source
from portal.services.memory_service import MemoryService
from tests.fakes.embedders import HashEmbedder

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def service(request: pytest.FixtureRequest) -> MemoryService:
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    ticks = iter(range(10_000))
    return MemoryService(SqlStore(engine), HashEmbedder(), clock=lambda: START + timedelta(seconds=next(ticks)))


def kept(service: MemoryService, place: Place) -> list[dict[str, Any]]:
    """What the round trip must keep, memory by memory (ids aside: they are never reused)."""
    out = []
    for m in sorted(service.list(place, state="all", limit=200).items, key=lambda m: m.text):
        history = service.history(place, m.id)
        out.append({
            "text": m.text, "kind": m.kind, "importance": m.importance, "pinned": m.pinned, "origin": m.origin,
            "channel": m.channel, "seen": m.seen, "state": m.state, "revision": m.revision,
            "created_at": m.created_at, "updated_at": m.updated_at, "last_used_at": m.last_used_at,
            "history": [(r.revision, r.text, r.kind, r.importance, r.origin, r.written_at) for r in history],
            "has_vector": m.has_vector,
        })
    return out


def test_export_erase_import_gives_the_same_memories_back(service: MemoryService) -> None:
    place = Place("ada", "acme")
    leeds = service.remember(place, "I live in Leeds", kind="fact", importance=4).memory
    service.update(place, leeds.id, text="I live in York")
    service.pin(place, leeds.id)
    service.remember(place, "Wants to learn the oboe", kind="goal", importance=5, origin="inferred",
                     channel="background", sources=(Source("consolidation", "conv-1"),))
    cello = service.remember(place, "Plays the cello on Sundays", kind="fact").memory
    service.recall(place, "cello")  # a use time
    before = kept(service, place)
    exported = document(service.export(place), None)
    file = json.dumps(exported).encode()

    service.forget_all(place)
    assert service.list(place, state="all").items == []
    done = service.import_parsed(place, parse(file), audit=AuditNote(None, "operator", "person.imported"))
    assert (done.format, len(done.added), done.duplicates, done.refused) == ("memory-portal/export", 3, 0, {})
    assert kept(service, place) == before
    assert cello.id not in done.added  # new ids

    again = service.import_parsed(place, parse(file))  # the same file twice adds nothing
    assert (len(again.added), again.duplicates) == (0, 3)
    assert len(service.list(place, state="all").items) == 3

    # an archived memory comes back archived
    exported["memories"] = [dict(exported["memories"][0], text="Used to live in Hull", state="archived", revisions=[])]
    service.import_parsed(place, parse(json.dumps(exported).encode()))
    assert [m.text for m in service.list(place, state="archived").items] == ["Used to live in Hull"]


def test_mem0_json_and_plain_lines_are_read_and_checked_like_any_write(service: MemoryService) -> None:
    place = Place("bo", "acme")
    mem0 = {"results": [
        {"id": "1", "memory": "Is vegetarian", "created_at": "2024-07-20T01:30:36.275141-07:00", "user_id": "bo"},
        {"id": "2", "memory": "Likes hiking in the Alps", "updated_at": "2024-07-21T10:00:00Z"},
        {"id": "3", "memory": "x" * 2000},  # too long: refused, counted, nothing half kept
    ]}
    done = service.import_parsed(place, parse(json.dumps(mem0).encode()))
    assert (done.format, len(done.added), done.refused) == ("mem0", 2, {"too_long": 1})
    veg = next(m for m in service.list(place).items if m.text == "Is vegetarian")
    assert veg.created_at == datetime(2024, 7, 20, 8, 30, 36, 275141, tzinfo=UTC)
    assert [s.kind for s in veg.sources] == ["import"] and veg.has_vector
    # a plain list: bullets and numbers off, blank lines skipped, a repeat of a kept memory counted
    lines = "Things ChatGPT remembers:\n\n- Prefers short answers\n2. Works night shifts\n• Is vegetarian\n"
    done = service.import_parsed(place, parse(lines.encode()))
    assert (done.format, len(done.added), done.duplicates) == ("lines", 3, 1)
    preview = service.import_parsed(place, parse(lines.encode()), dry_run=True)  # a preview keeps nothing
    assert (preview.duplicates, preview.new, preview.added) == (4, 0, [])
    fresh = service.import_parsed(place, parse(b"Collects stamps\n"), dry_run=True)
    assert (fresh.new, fresh.added) == (1, [])
    assert len(service.list(place).items) == 5


@pytest.mark.parametrize(("raw", "code"), [
    (b"", "import_empty"), (b"\n \n", "import_empty"), (b"\xff\xfe\x00bad", "import_unreadable"),
    (b'{"format": "memory-portal/export", "version": 9, "memories": []}', "import_unknown_version"),
    (b'{"whatever": 1}', "import_unreadable"), (b"[1, 2]", "import_unreadable"), (b"{" * 5000, "import_unreadable"),
    (b"x\n" * (3 * 1024 * 1024), "import_too_large"),
])
def test_a_file_that_cannot_be_imported_is_refused_with_a_code(raw: bytes, code: str) -> None:
    with pytest.raises(Refused) as refused:
        parse(raw)
    assert refused.value.code == code


def test_a_line_the_file_repeats_is_a_repeat_within_the_file_not_kept_already(service: MemoryService) -> None:
    """Issue 38, item 10: the preview tells a line the file repeats (a duplicate within the file)
    from one the person keeps already, even when the repeated line is kept already too."""
    place = Place("ada", "acme")
    service.remember(place, "Plays the cello", kind="fact")
    lines = "- Keeps bees\n- Plays the cello\n- keeps  BEES\n- Plays the cello\n- Works night shifts\n"
    preview = service.import_parsed(place, parse(lines.encode()), dry_run=True)
    assert preview.texts_new == ["Keeps bees", "Works night shifts"]
    assert preview.texts_held == ["Plays the cello"]
    assert [line.text for line in preview.lines_repeated] == ["keeps BEES", "Plays the cello"]
    assert (preview.new, preview.duplicates, preview.repeated) == (2, 3, 2)
    done = service.import_parsed(place, parse(lines.encode()))
    assert (len(done.added), done.duplicates, done.repeated) == (2, 3, 2)
