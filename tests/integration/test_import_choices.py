"""Import as a person expects it (issue 27, item 7), on SQLite and on PostgreSQL: a line gets the
kind its first cue word names ("Likes tea" is a preference, not a fact), a line that means what a
kept memory says (as `remember` finds a duplicate) counts as kept already, the person's choices in
the preview (a kind, a line left out) are what is kept, and the newest-first list shows the memories
in the file's order. Every rule of before stays: each wording is checked, refusals are counted, one
audited transaction, one Undo of the import."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from portal.adapters.sql.store import SqlStore
from portal.domain.audit import AuditNote
from portal.domain.errors import Refused
from portal.domain.imports import Choices, parse
from portal.domain.kind_cues import guess_kind
from portal.domain.options import Options
from portal.domain.rules import DEFAULT_KINDS, Kinds, pattern_rule
from portal.domain.types import Place
from portal.services.memory_service import MemoryService
from tests.fakes.embedders import HashEmbedder

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ADA = Place("ada", "acme")
LINES = ("Likes tea\nWants to learn Japanese\nHas a cat called Miso\nFeels anxious before flights\n"
         "My sister's birthday is in May\n")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")


def service_on(engine: Any, **options: Any) -> MemoryService:
    """"loves" means "likes" to this embedder: a match by meaning, not by words."""
    ticks = iter(range(10_000))
    return MemoryService(SqlStore(engine), HashEmbedder(synonyms={"loves": "likes", "adores": "likes"}),
                         options=Options(rules=(pattern_rule("health", [r"\bflu\b"]),), **options),
                         clock=lambda: START + timedelta(seconds=next(ticks)))


@pytest.fixture
def service(engine: Any) -> MemoryService:
    return service_on(engine)


def listed(service: MemoryService) -> list[tuple[str, str]]:
    """The person's list as the portal shows it: newest first."""
    return [(m.text, m.kind) for m in service.list(ADA, limit=100).items]


def test_each_line_gets_the_kind_its_words_name_and_the_list_reads_as_the_file(service: MemoryService) -> None:
    preview = service.import_parsed(ADA, parse(LINES.encode()), dry_run=True)
    assert [(line.index, line.text, line.kind) for line in preview.lines_new] == [
        (0, "Likes tea", "preference"), (1, "Wants to learn Japanese", "goal"), (2, "Has a cat called Miso", "fact"),
        (3, "Feels anxious before flights", "feeling"), (4, "My sister's birthday is in May", "person"),
    ]
    done = service.import_parsed(ADA, parse(LINES.encode()))
    assert listed(service) == [(line.text, line.kind) for line in preview.lines_new]  # the file's order, top to bottom
    # Memories added afterwards come above them, as anything new does.
    service.remember(ADA, "Plays the cello")
    assert [text for text, _ in listed(service)][:2] == ["Plays the cello", "Likes tea"]
    assert len(done.added) == 5


def test_a_file_that_gives_kinds_keeps_them_and_a_deployment_without_the_kind_falls_back(engine: Any) -> None:
    only = service_on(engine, kinds=Kinds(kinds=("fact", "goal")))
    only.import_parsed(ADA, parse(b"Likes tea\nWants to learn Japanese\n"))
    assert sorted(listed(only)) == [("Likes tea", "fact"), ("Wants to learn Japanese", "goal")]
    assert guess_kind("Likes tea", DEFAULT_KINDS) == "preference" and guess_kind("Likes tea", ("fact",)) is None


def test_a_line_that_means_what_a_kept_memory_says_is_kept_already(service: MemoryService) -> None:
    kept = service.remember(ADA, "Likes green tea", kind="preference").memory
    file = b"Loves green tea\nAdores green tea\nLikes black coffee\nlikes GREEN tea!\n"
    preview = service.import_parsed(ADA, parse(file), dry_run=True)
    assert [line.text for line in preview.lines_new] == ["Likes black coffee"]
    assert [(line.text, line.kept_as) for line in preview.lines_held] == [
        ("Loves green tea", "Likes green tea"), ("Adores green tea", "Likes green tea"), ("likes GREEN tea!", "Likes green tea"),
    ]
    done = service.import_parsed(ADA, parse(file))
    assert (len(done.added), done.duplicates) == (1, 3)
    assert service.get(ADA, kept.id).text == "Likes green tea"  # the kept memory stays as it is
    # ...as remember would have found it: the same meaning meets the same memory.
    again = service.remember(ADA, "Loves green tea", on_duplicate="reinforce")
    assert again.memory.id == kept.id and again.reinforced


def test_the_persons_choices_win_and_every_rule_still_holds(service: MemoryService) -> None:
    file = b"Likes tea\nHad the flu in May\nWants to learn Japanese\nHas a cat called Miso\n"
    choices = Choices(kinds={0: "fact", 3: "Event", 1: "feeling"}, left_out=frozenset({2, 99}))
    preview = service.import_parsed(ADA, parse(file), dry_run=True, choices=choices)
    assert [(line.text, line.kind) for line in preview.lines_new] == [("Likes tea", "fact"),
                                                                      ("Has a cat called Miso", "event")]
    assert (preview.refused, preview.skipped) == ({"health": 1}, 1)  # a chosen kind passes the checks too
    done = service.import_parsed(ADA, parse(file), choices=choices, audit=AuditNote(None, "operator", "person.imported"))
    assert listed(service) == [("Likes tea", "fact"), ("Has a cat called Miso", "event")]
    assert (len(done.added), done.refused, done.skipped) == (2, {"health": 1}, 1)
    assert isinstance(service.ctx.store, SqlStore)
    [entry] = [e for e in service.ctx.store.audit_trail() if e.action == "person.imported"]
    assert entry.counts == {"added": 2, "duplicates": 0, "refused": 1, "earlier_refused": 0}
    # A left-out line is not "kept already": the same file again offers it.
    assert [line.text for line in service.import_parsed(ADA, parse(file), dry_run=True).lines_new] == [
        "Wants to learn Japanese"]
    assert service.undo_import(ADA, done.batch) == 2
    assert listed(service) == []



def test_a_paused_memory_imports_nothing(service: MemoryService) -> None:
    service.pause(ADA)
    for dry_run in (True, False):
        with pytest.raises(Refused) as refused:
            service.import_parsed(ADA, parse(LINES.encode()), dry_run=dry_run)
        assert refused.value.code == "paused"
    assert listed(service) == []
    service.resume(ADA)
    assert len(service.import_parsed(ADA, parse(LINES.encode())).added) == 5
