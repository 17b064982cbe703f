"""Import of a forged or damaged file (DESIGN §13, attack tests beside test_import.py), on SQLite
and on PostgreSQL: every wording a file brings, current or earlier, passes the checks any write
passes, or is left out and counted; only the import's own batch marks what it added; whatever the
file holds, the answer is a code or a count, never an error of the database."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portal.adapters.sql.store import SqlStore
from portal.domain.errors import Refused
from portal.domain.imports import parse
from portal.domain.options import Options
from portal.domain.rules import Kinds, pattern_rule
from portal.domain.types import Place, Source
from portal.services.memory_service import MemoryService
from tests.fakes.embedders import HashEmbedder

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ADA = Place("ada", "acme")
HEALTH = pattern_rule("health", [r"\bflu\b"])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")


def service_on(engine: Any, **options: Any) -> MemoryService:
    """A service where Bob is another account of Ada's tenant and a content rule refuses the flu."""
    ticks = iter(range(10_000))
    return MemoryService(SqlStore(engine), HashEmbedder(), options=Options(rules=(HEALTH,), **options),
                         names_of=lambda place: ["Bob"], clock=lambda: START + timedelta(seconds=next(ticks)))


@pytest.fixture
def service(engine: Any) -> MemoryService:
    return service_on(engine)


def export_of(*memories: dict[str, Any]) -> bytes:
    return json.dumps({"format": "memory-portal/export", "version": 1, "memories": list(memories)}).encode()


def wording(revision: Any, text: Any, **fields: Any) -> dict[str, Any]:
    return {"revision": revision, "text": text, "kind": "fact", "importance": 3, **fields}


def test_every_earlier_wording_passes_the_checks_of_any_write(service: MemoryService) -> None:
    # A file lists earlier wordings newest first, as the export writes them.
    file = export_of({"text": "Likes tea", "kind": "preference", "importance": 4, "revision": 7, "revisions": [
        wording(6, "Bob has a penicillin allergy"),  # names another account of the tenant
        wording(5, "Walks to work", kind="k" * 80, importance=999999),  # an unknown kind, an importance off the scale
        wording(4, "x" * 600),  # longer than any memory may be
        wording(3, "Had the flu in May"),  # a content rule refuses it
        wording(2, "Cycles to work"),
        wording(2, "Drives to work"),  # the same number twice
        wording(9, "From later on"),  # not earlier than the memory's own revision
        wording(1, "  **Takes**   the bus  "),
    ]})
    preview = service.import_parsed(ADA, parse(file), dry_run=True, person_name="Ada")
    done = service.import_parsed(ADA, parse(file), person_name="Ada")
    expected = {"other_person": 1, "too_long": 1, "health": 1, "invalid_revision": 2}
    assert (preview.new, preview.refused, preview.earlier_refused) == (1, {}, expected)
    assert (len(done.added), done.refused, done.earlier_refused) == (1, {}, expected)

    [memory] = service.list(ADA).items
    history = [(r.revision, r.text, r.kind, r.importance) for r in service.history(ADA, memory.id)]
    # kept as a write keeps them: the kind resolved (to the fallback, "fact"), the importance clamped, the text cleaned
    assert history == [(7, "Likes tea", "preference", 4), (5, "Walks to work", "fact", 5), (2, "Cycles to work", "fact", 3),
                       (1, "Takes the bus", "fact", 3)]
    # Undo takes back only the wording just below the current one (revision 6): refused here, it
    # is not kept, and an older one never becomes current by an Undo.
    with pytest.raises(Refused) as refused:
        service.undo(ADA, memory.id)
    assert refused.value.code == "nothing_to_undo"
    assert service.undo_import(ADA, done.batch) == 1
    assert service.list(ADA, state="all").items == []


def test_an_undo_after_an_import_brings_back_only_a_checked_wording(service: MemoryService) -> None:
    file = export_of({"text": "Likes tea", "kind": "preference", "importance": 4, "revision": 2, "revisions": [
        wording(1, "  **Walks**   to work  ", kind="k" * 80, importance=999999)]})
    done = service.import_parsed(ADA, parse(file), person_name="Ada")
    [memory] = service.list(ADA).items
    restored = service.undo(ADA, memory.id).memory
    # as a write keeps it: the text cleaned, the kind resolved (to the fallback), the importance clamped
    assert restored is not None and (restored.text, restored.kind, restored.importance) == ("Walks to work", "fact", 5)
    assert Source("import", done.batch) in restored.sources
    assert service.undo_import(ADA, done.batch) == 1
    assert service.list(ADA, state="all").items == []


def test_a_kind_no_write_could_give_is_left_out_with_its_wording(engine: Any) -> None:
    service = service_on(engine, kinds=Kinds(default=None))  # no fallback kind: an unknown one is refused
    file = export_of({"text": "Likes tea", "kind": "preference", "revision": 3, "revisions": [
        wording(2, "Likes coffee", kind="k" * 80), wording(1, "Likes cocoa", kind="preference")]})
    done = service.import_parsed(ADA, parse(file))
    assert (len(done.added), done.earlier_refused) == (1, {"invalid_kind": 1})
    [memory] = service.list(ADA).items
    assert [(r.text, r.kind) for r in service.history(ADA, memory.id)] == [("Likes tea", "preference"),
                                                                            ("Likes cocoa", "preference")]


def test_only_the_imports_own_batch_marks_what_it_added(service: MemoryService) -> None:
    first = service.import_parsed(ADA, parse(b"Plays the cello\n"))
    forged = [{"kind": "import", "ref": first.batch}, {"kind": "consolidation", "ref": "conv-1"},
              {"kind": "sudo", "ref": "x"}, {"kind": "api", "ref": "bad\u0000ref"}, {"kind": "tool", "ref": "\ud800"}]
    second = service.import_parsed(ADA, parse(export_of(
        {"text": "Keeps bees", "revision": 2, "sources": forged, "revisions": [wording(1, "Keeps wasps", sources=forged)]})))
    [bees] = [m for m in service.list(ADA).items if m.text == "Keeps bees"]
    own = Source("import", second.batch)
    assert bees.sources == (Source("consolidation", "conv-1"), Source("api"), Source("tool"), own)
    assert [r.sources for r in service.history(ADA, bees.id)] == [bees.sources, bees.sources]
    # Taking back the first import takes back its own memory only.
    assert service.undo_import(ADA, first.batch) == 1
    assert [m.text for m in service.list(ADA).items] == ["Keeps bees"]
    assert service.undo_import(ADA, second.batch) == 1


def test_times_from_a_file_are_never_later_than_the_import(service: MemoryService) -> None:
    later = "9998-12-31T23:59:59-14:00"  # the last moment a file may name, in the year 9999 in UTC
    service.import_parsed(ADA, parse(export_of({"text": "Likes tea", "revision": 2, "created_at": "2025-01-01T00:00:00Z",
                                                "updated_at": later, "last_used_at": later,
                                                "revisions": [wording(1, "Likes cocoa", written_at=later)]})))
    [memory] = service.list(ADA).items
    _, earlier = service.history(ADA, memory.id)
    assert memory.created_at == datetime(2025, 1, 1, tzinfo=UTC)
    assert memory.updated_at <= START + timedelta(minutes=1) and memory.last_used_at == memory.updated_at
    assert memory.created_at <= earlier.written_at <= memory.updated_at
    # a memory whose file says it changed before it was made changes when it is made
    service.import_parsed(ADA, parse(export_of({"text": "Likes jam", "created_at": "2025-05-01T00:00:00Z",
                                                "updated_at": "2025-01-01T00:00:00Z"})))
    jam = next(m for m in service.list(ADA).items if m.text == "Likes jam")
    assert jam.updated_at == jam.created_at == datetime(2025, 5, 1, tzinfo=UTC)


ODD_MEMORIES: list[Any] = [
    {"text": "Odd", "revisions": 5},
    {"text": "Odd", "revisions": "abc"},
    {"text": "Odd", "revisions": {"revision": 1}},
    {"text": "Odd", "revision": 2, "revisions": [[1, "x"], None, 7, {"revision": True, "text": "y"}]},
    {"text": "Odd", "revision": 2, "revisions": [{"revision": 1, "text": {"a": 1}, "kind": ["fact"], "importance": [5]}]},
    {"text": "Odd", "revision": 2, "revisions": [{"revision": 1, "text": "Ok\u0000then", "origin": {"x": 1}}]},
    {"text": "Odd", "revision": 2, "revisions": [{"revision": 1, "text": "Lone \ud800 surrogate"}]},
    {"text": "Odd", "revision": 2, "revisions": [{"revision": 1.5, "text": "y"}, {"revision": "1", "text": "z"}]},
    {"text": "Odd", "revision": 10**30, "kind": "k" * 5000, "importance": 10**30, "sources": "api"},
    {"text": "Odd", "created_at": "0001-01-01T00:00:00+14:00", "updated_at": 5, "last_used_at": "x" * 100},
    {"text": "Odd", "pinned": "yes", "seen": None, "state": "deleted", "channel": ["x"], "origin": "god"},
    {"text": "Odd", "revision": 2, "revisions": [wording(1, "Ok", kind="k" * 65, importance=999999)]},
]


@pytest.mark.parametrize("odd", ODD_MEMORIES, ids=[f"odd{i}" for i in range(len(ODD_MEMORIES))])
def test_whatever_a_memory_of_the_file_holds_the_answer_is_a_code_or_a_count(service: MemoryService,
                                                                            odd: dict[str, Any]) -> None:
    file = export_of(odd, {"text": "Plays the cello", "kind": "fact"})
    try:
        done = service.import_parsed(ADA, parse(file))
    except Refused as refused:  # the file as a whole
        assert refused.code.startswith("import_")
        return
    assert len(done.added) == 2 and not done.refused
    for memory in service.list(ADA).items:
        assert memory.kind in ("goal", "preference", "fact", "person", "event", "feeling") and 1 <= memory.importance <= 5
        for earlier in service.history(ADA, memory.id)[1:]:
            assert 0 < earlier.revision < memory.revision and len(earlier.kind) <= 64 and 1 <= earlier.importance <= 5
    assert service.undo_import(ADA, done.batch) == 2


def test_any_shape_of_an_exported_memory_is_imported_or_counted(sqlite_engine: Any) -> None:
    """Random values in every field a memory and its earlier wordings have (SQLite: the rows must
    still fit its keys; the kinds and limits are the same on PostgreSQL, proven above)."""
    service = service_on(sqlite_engine)
    odd = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**7), st.floats(allow_nan=True), st.text(max_size=80),
                    st.sampled_from(["fact", "goal", "2026-01-01T00:00:00Z", "9998-12-31T23:59:59-14:00", "Bob", "import"]),
                    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
    fields = ("revision", "text", "kind", "importance", "origin", "sources", "written_at", "created_at", "updated_at",
              "last_used_at", "pinned", "state", "channel", "seen")
    wordings = st.lists(st.fixed_dictionaries({}, optional={f: odd for f in fields[:7]}), max_size=4)
    memory = st.fixed_dictionaries({"text": st.text(min_size=1, max_size=40)},
                                   optional={**{f: odd for f in fields if f != "text"}, "revisions": st.one_of(odd, wordings)})

    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(memory, min_size=1, max_size=3))
    def imports(memories: list[dict[str, Any]]) -> None:
        try:
            done = service.import_parsed(ADA, parse(export_of(*memories)))
        except Refused as refused:
            assert refused.code.startswith("import_")
            return
        service.undo_import(ADA, done.batch)

    imports()
