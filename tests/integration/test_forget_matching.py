"""Forget everything about … (issue 29, item 4) on every store: the in-memory one, SQLite and
PostgreSQL. A subject finds its memories by words (stemmed), by meaning (the relevance floor) and
by the people it names, archived ones too; the person unticks what stays; the confirmation forgets
exactly the previewed memories still as they were seen, in one audited transaction, and nothing
written or corrected after the preview; a token of another place, expired or altered is refused."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from portal.adapters.cipher import FernetCipher, generate_key
from portal.adapters.sql.store import SqlStore
from portal.domain.apps import App
from portal.domain.audit import AuditNote
from portal.domain.errors import InvalidArgument, NotFound, Refused
from portal.domain.subjects import PREVIEW_MAX, seal
from portal.domain.types import Place
from portal.ports import Filters
from portal.services.memory_service import MemoryService
from tests.fakes.embedders import HashEmbedder

ADA = Place("ada", "acme")
BOB = Place("bob", "acme")
AUDIT = AuditNote("account-ada", "member", "person.forgot_matching")


class Clock:
    """A clock ticking one second per reading, which a test moves on by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def service_on(store: Any, clock: Clock, embedder: Any = None) -> MemoryService:
    return MemoryService(store, embedder, clock=clock)


@pytest.fixture
def words_only(store: Any, clock: Clock) -> MemoryService:
    """No embedder: only words and names can match."""
    return service_on(store, clock)


def keep(service: MemoryService, *texts: str, place: Place = ADA) -> dict[str, str]:
    """Each text kept as its own memory (no duplicate met); their ids by text."""
    return {t: service.remember(place, t, on_duplicate="keep").memory.id for t in texts}


def texts_of(items: list[Any]) -> set[str]:
    return {m.text for m in items}


def kept(service: MemoryService, place: Place = ADA) -> set[str]:
    return {m.text for m in service.list(place, state="all", limit=200).items}


def test_a_subject_finds_the_memories_sharing_a_word_stemmed_and_no_other(words_only: MemoryService) -> None:
    keep(words_only, "Paints birds on Sundays", "Painted the kitchen blue", "Likes green tea", "Has a cat called Miso")
    preview = words_only.preview_forget_matching(ADA, "painting")
    assert texts_of(preview.items) == {"Paints birds on Sundays", "Painted the kitchen blue"}
    assert not preview.more
    # A word only inside another ("pain" in "Paints") is no match: recall's fragment match is not used.
    assert words_only.preview_forget_matching(ADA, "pain").items == []
    # Stop words say nothing of a subject: "about my" shares "my" with nothing that matters.
    assert texts_of(words_only.preview_forget_matching(ADA, "about the tea").items) == {"Likes green tea"}


def test_a_subject_finds_by_meaning_what_reaches_the_relevance_floor(store: Any, clock: Clock) -> None:
    embedder = HashEmbedder(synonyms={"puppy": "dog"})
    service = service_on(store, clock, embedder)
    keep(service, "Walks the puppy every morning", "Has a cat called Miso", "Plays the cello")
    floor = service.options.relevance_floor
    assert embedder.cosine("dog", "Walks the puppy every morning") >= floor  # no word shared: meaning alone
    assert embedder.cosine("dog", "Has a cat called Miso") < floor and embedder.cosine("dog", "Plays the cello") < floor
    assert texts_of(service.preview_forget_matching(ADA, "dog").items) == {"Walks the puppy every morning"}


def test_a_subject_finds_every_memory_mentioning_a_person_it_names(words_only: MemoryService) -> None:
    keep(words_only, "Anna called about the wedding", "My sister Anna lives in Lyon", "Joanna sings jazz",
         "Will moved to Oslo last spring", "I will call mum on Sunday", "Lunch with Will and Anna")
    about_anna = words_only.preview_forget_matching(ADA, "my sister Anna")
    assert texts_of(about_anna.items) == {"Anna called about the wedding", "My sister Anna lives in Lyon",
                                          "Lunch with Will and Anna"}
    # "will" is a stop word, so no word of "my brother Will" is shared with his memories: his name is.
    # Written with a small letter it is no name: "I will call mum" stays out.
    about_will = words_only.preview_forget_matching(ADA, "my brother Will")
    assert texts_of(about_will.items) == {"Will moved to Oslo last spring", "Lunch with Will and Anna"}


def test_someone_the_place_knows_is_a_name_however_the_subject_writes_it(
    words_only: MemoryService, store: Any, clock: Clock
) -> None:
    keep(words_only, "Will moved to Oslo last spring", "I will call mum on Sunday")  # before Will had an account
    service = MemoryService(store, None, clock=clock, names_of=lambda place: ["Will"])
    assert texts_of(service.preview_forget_matching(ADA, "my brother will").items) == {"Will moved to Oslo last spring"}
    assert words_only.preview_forget_matching(ADA, "my brother will").items == []  # a small "will" names nobody


def test_archived_memories_are_found_and_forgotten_too(words_only: MemoryService, store: Any) -> None:
    ids = keep(words_only, "Collects vinyl records", "Sold the vinyl player")
    with store.write(ADA) as tx:
        tx.set_state([ids["Sold the vinyl player"]], "archived")
        tx.commit()
    preview = words_only.preview_forget_matching(ADA, "vinyl")
    assert {(m.text, m.state) for m in preview.items} == {("Collects vinyl records", "active"),
                                                           ("Sold the vinyl player", "archived")}
    done = words_only.forget_matching(ADA, preview.token, [m.id for m in preview.items], audit=AUDIT)
    assert set(done.forgotten) == set(ids.values()) and kept(words_only) == set()


def test_what_the_person_unticks_stays_and_the_rest_is_forgotten_as_forget_does(
    words_only: MemoryService, store: Any
) -> None:
    ids = keep(words_only, "Likes green tea", "Drinks tea at four", "Bought a teapot for tea", "Runs on Mondays")
    words_only.update(ADA, ids["Likes green tea"], text="Likes green tea a lot")  # an earlier wording to erase
    preview = words_only.preview_forget_matching(ADA, "tea")
    assert len(preview.items) == 3
    ticked = [ids["Likes green tea"], ids["Drinks tea at four"]]
    done = words_only.forget_matching(ADA, preview.token, ticked, audit=AUDIT)
    assert (sorted(done.forgotten), done.changed, done.gone, done.revisions) == (sorted(ticked), (), (), 1)
    assert kept(words_only) == {"Bought a teapot for tea", "Runs on Mondays"}
    for memory_id in ticked:
        with pytest.raises(NotFound):
            words_only.get(ADA, memory_id)
        with store.read(ADA) as tx:
            assert tx.is_tombstoned(memory_id) and tx.history(memory_id) == []


def test_a_memory_written_after_the_preview_is_never_taken(words_only: MemoryService) -> None:
    keep(words_only, "Likes green tea", "Drinks tea at four")
    preview = words_only.preview_forget_matching(ADA, "tea")
    later = keep(words_only, "Bought tea in bulk")["Bought tea in bulk"]
    seen = [m.id for m in preview.items]
    with pytest.raises(Refused) as refused:
        words_only.forget_matching(ADA, preview.token, [*seen, later], audit=AUDIT)
    assert refused.value.code == "not_previewed"
    assert kept(words_only) == {"Likes green tea", "Drinks tea at four", "Bought tea in bulk"}  # nothing went
    done = words_only.forget_matching(ADA, preview.token, seen, audit=AUDIT)
    assert len(done.forgotten) == 2 and kept(words_only) == {"Bought tea in bulk"}


def test_a_memory_corrected_after_the_preview_is_kept_and_reported(words_only: MemoryService) -> None:
    ids = keep(words_only, "Likes green tea", "Drinks tea at four")
    preview = words_only.preview_forget_matching(ADA, "tea")
    words_only.update(ADA, ids["Drinks tea at four"], text="Drinks tea at five")
    done = words_only.forget_matching(ADA, preview.token, list(ids.values()), audit=AUDIT)
    assert (done.forgotten, done.changed, done.gone) == ((ids["Likes green tea"],), (ids["Drinks tea at four"],), ())
    assert kept(words_only) == {"Drinks tea at five"}
    # Sent again, nothing more goes: the forgotten one is gone, the corrected one still changed.
    again = words_only.forget_matching(ADA, preview.token, list(ids.values()), audit=AUDIT)
    assert (again.forgotten, again.changed, again.gone) == ((), (ids["Drinks tea at four"],), (ids["Likes green tea"],))


def test_a_token_of_another_place_expired_or_altered_is_refused(words_only: MemoryService, clock: Clock) -> None:
    ada_ids = keep(words_only, "Likes green tea")
    bob_ids = keep(words_only, "Likes black tea", place=BOB)
    preview = words_only.preview_forget_matching(ADA, "tea")
    bobs = words_only.preview_forget_matching(BOB, "tea")

    def refused(token: Any, ids: list[str], place: Place = ADA) -> str:
        with pytest.raises(Refused) as caught:
            words_only.forget_matching(place, token, ids, audit=AUDIT)
        return caught.value.code

    assert refused(bobs.token, list(bob_ids.values())) == "invalid_preview"  # Bob's token in Ada's place
    assert refused(preview.token, list(ada_ids.values()), BOB) == "invalid_preview"  # Ada's token in Bob's
    assert refused(seal(BOB, {}, clock.now + timedelta(minutes=5), None).replace("f1.", "f2."), []) == "invalid_preview"
    version, body, mac = preview.token.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["m"].append([bob_ids["Likes black tea"], 1])  # another id slipped in, the seal kept
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    assert refused(f"{version}.{forged}.{mac}", list(ada_ids.values())) == "invalid_preview"
    assert refused(seal(ADA, {ada_ids["Likes green tea"]: 1}, clock.now + timedelta(minutes=5), b"another key"),
                   list(ada_ids.values())) == "invalid_preview"
    for nonsense in (None, "", "a.b", "f1.!!.!!", 42, "x" * 300_000):
        assert refused(nonsense, []) == "invalid_preview"
    clock.now += timedelta(minutes=31)
    assert refused(preview.token, list(ada_ids.values())) == "invalid_preview"
    assert kept(words_only) == {"Likes green tea"} and kept(words_only, BOB) == {"Likes black tea"}


def test_a_token_forged_without_a_secret_reaches_no_other_place(words_only: MemoryService, clock: Clock) -> None:
    """A store without `words_secret` signs with a public key (portal.domain.subjects): a caller can
    then forge a token for its own place, and it forgets nothing of anyone else's."""
    bob_ids = keep(words_only, "Likes black tea", place=BOB)
    assert words_only.store.words_secret is None
    forged = seal(ADA, {bob_ids["Likes black tea"]: 1}, clock.now + timedelta(minutes=5), None)
    done = words_only.forget_matching(ADA, forged, list(bob_ids.values()), audit=AUDIT)
    assert (done.forgotten, done.gone) == ((), tuple(bob_ids.values()))
    assert kept(words_only, BOB) == {"Likes black tea"}


def test_one_content_free_audit_entry_and_the_preview_marks_nothing_used(words_only: MemoryService,
                                                                          store: Any) -> None:
    ids = keep(words_only, "Likes green tea", "Drinks tea at four")
    before = len(store.audit_trail())
    preview = words_only.preview_forget_matching(ADA, "tea")
    assert all(words_only.get(ADA, i).last_used_at is None for i in ids.values())
    assert len(store.audit_trail()) == before  # a preview changes nothing
    words_only.forget_matching(ADA, preview.token, list(ids.values()), audit=AUDIT)
    trail = store.audit_trail()
    assert len(trail) == before + 1
    entry = trail[-1]
    assert (entry.action, entry.subject_owner_id, entry.scope, entry.counts) == (
        "person.forgot_matching", "ada", "acme", {"memories": 2, "revisions": 0})
    assert "tea" not in repr(entry)


def test_a_preview_lists_at_most_its_bound_and_says_there_are_more(words_only: MemoryService) -> None:
    words_only.remember_many(ADA, [f"Tea note number {n}" for n in range(PREVIEW_MAX + 5)], on_duplicate="keep")
    preview = words_only.preview_forget_matching(ADA, "tea")
    assert len(preview.items) == PREVIEW_MAX and preview.more
    done = words_only.forget_matching(ADA, preview.token, [m.id for m in preview.items], audit=AUDIT)
    assert len(done.forgotten) == PREVIEW_MAX
    rest = words_only.preview_forget_matching(ADA, "tea")
    assert len(rest.items) == 5 and not rest.more


def test_bad_subjects_and_ids_are_refused_with_their_codes(words_only: MemoryService) -> None:
    preview = words_only.preview_forget_matching(ADA, "tea")
    assert preview.items == []
    for subject in ("", "   ", None, 42, "x" * 501, "tea\x00"):
        with pytest.raises(InvalidArgument) as caught:
            words_only.preview_forget_matching(ADA, subject)
        assert caught.value.code == "invalid_subject"
    for ids in ("abc", None, [1, 2], {"a": 1}):
        with pytest.raises(InvalidArgument) as caught:
            words_only.forget_matching(ADA, preview.token, ids)
        assert caught.value.code == "invalid_ids"


def test_a_paused_person_or_app_may_forget_and_a_blocked_app_may_not(words_only: MemoryService,
                                                                     store: Any) -> None:
    keep(words_only, "Likes green tea", "Drinks tea at four", "Bought a teapot for tea")
    words_only.pause(ADA)
    preview = words_only.preview_forget_matching(ADA, "teapot")
    assert len(words_only.forget_matching(ADA, preview.token, [m.id for m in preview.items]).forgotten) == 1
    words_only.resume(ADA)
    paused_app, blocked_app = App("app-paused", "Paused bot"), App("app-blocked", "Blocked bot")
    words_only.set_app_control(ADA, paused_app.id, "paused")
    words_only.set_app_control(ADA, blocked_app.id, "blocked")
    bot = words_only.for_app(paused_app)
    preview = bot.preview_forget_matching(ADA, "tea")
    done = bot.forget_matching(ADA, preview.token, [m.id for m in preview.items], audit=AUDIT)
    assert len(done.forgotten) == 2 and kept(words_only) == set()
    with store.read(ADA) as tx:
        uses = {(u.app_id, u.action) for u in tx.app_uses()}
    assert ("app-paused", "read") in uses and ("app-paused", "forgot") in uses and ("app-paused", "recalled") not in uses
    for attempt in (lambda: words_only.for_app(blocked_app).preview_forget_matching(ADA, "tea"),
                    lambda: words_only.for_app(blocked_app).forget_matching(ADA, preview.token, [])):
        with pytest.raises(Refused) as caught:
            attempt()
        assert caught.value.code == "app_blocked"


def test_an_empty_confirmation_forgets_nothing_and_writes_no_audit_entry(words_only: MemoryService,
                                                                         store: Any) -> None:
    keep(words_only, "Likes green tea")
    preview = words_only.preview_forget_matching(ADA, "tea")
    before = len(store.audit_trail())
    done = words_only.forget_matching(ADA, preview.token, [], audit=AUDIT)
    assert done.to_json() == {"memories": 0, "revisions": 0, "forgotten": [], "changed": [], "gone": []}
    assert kept(words_only) == {"Likes green tea"} and len(store.audit_trail()) == before
    with store.read(ADA) as tx:
        assert len(tx.list(Filters(state=None))) == 1


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_another_process_with_the_deployments_keys_confirms_a_preview_and_no_other_key_does(
    request: pytest.FixtureRequest, database: str, clock: Clock
) -> None:
    """The token is signed with the store's `words_secret` (derived from MEMORY_ENCRYPTION_KEYS):
    a preview made by one process is confirmed by another of the same deployment; a process with
    other keys, or with none, cannot open it."""
    engine = request.getfixturevalue("sqlite_engine" if database == "sqlite" else "pg_engine")
    key = generate_key()

    def process(*keys: str) -> MemoryService:
        return MemoryService(SqlStore(engine, cipher=FernetCipher(list(keys)) if keys else None), None, clock=clock)

    first, second = process(key), process(key)
    ids = keep(first, "Likes green tea", "Drinks tea at four")
    preview = first.preview_forget_matching(ADA, "tea")
    for stranger in (process(generate_key(), key), process()):  # another primary key (it still decrypts), or none
        with pytest.raises(Refused) as refused:
            stranger.forget_matching(ADA, preview.token, list(ids.values()), audit=AUDIT)
        assert refused.value.code == "invalid_preview"
    done = second.forget_matching(ADA, preview.token, list(ids.values()), audit=AUDIT)
    assert sorted(done.forgotten) == sorted(ids.values()) and kept(second) == set()
