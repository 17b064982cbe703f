"""Migration 0018 (issue 38, item 25): the consolidation refs kept before it, in the clear, become
their conversation keys — the claims, the jobs, the sources of memories and earlier wordings — keyed
with the store's secret where the text is encrypted (refused without it), and a conversation learnt
before the upgrade is still learnt once only: sent again it is `already`, and a job queued before
runs under its key. SQLite and PostgreSQL, without and with keys."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import column, insert, select, table
from sqlalchemy.engine import Engine

from portal.adapters.cipher import FernetCipher, generate_key
from portal.adapters.sql.keycheck import check_keys
from portal.adapters.sql.migrate import upgrade
from portal.adapters.sql.ref_keys import KeysNeeded
from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.tables import UTCDateTime, consolidation_jobs, consolidation_refs, memories, memory_revisions
from portal.domain.decisions import conversation_key
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

PLACE = Place("ada", "default")
NOW = datetime(2026, 12, 1, tzinfo=UTC)
WORD = "qzfernmoth"  # in a ref only
# The claims as 0017 kept them (no app yet: 0021 names it).
CLAIMS_AT_0017 = table("consolidation_refs", *(column(n, UTCDateTime() if n.endswith(("_at", "_until")) else None)
                                               for n in ("owner_id", "scope", "ref", "claimed_at", "state", "lease_until",
                                                         "holder")))


class Model:
    """The model, at our own boundary: it learns one fact from whatever it is shown."""

    def complete(self, system: str, prompt: str) -> str:
        return json.dumps({"facts": [{"text": "Is training for a marathon"}], "summary": "running"})


def sources(*refs: str) -> str:
    return json.dumps([{"kind": "consolidation", "ref": r, "messages": [0]} for r in refs] + [{"kind": "api"}])


def kept_before(engine: Engine, cipher: FernetCipher | None) -> None:
    """What a database at 0017 held: two claims, a queued job, a memory and an earlier wording learnt
    from a conversation, and a memory of the API whose own ref is not a conversation's."""
    seal = cipher.encrypt if cipher is not None else (lambda text: text)
    memory = {"owner_id": "ada", "scope": "default", "words_key": "k", "kind": "fact", "importance": 3,
              "origin": "inferred", "channel": "background", "seen": True, "pinned": False, "state": "active",
              "last_op": "update", "created_at": NOW, "updated_at": NOW}
    with engine.begin() as conn:
        conn.execute(insert(CLAIMS_AT_0017).values(owner_id="ada", scope="default", ref=f"talk {WORD} 1",
                                                   claimed_at=NOW, state="done"))
        conn.execute(insert(CLAIMS_AT_0017).values(owner_id="bob", scope="default", ref=f"talk {WORD} 1",
                                                   claimed_at=NOW, state="running", holder="dead",
                                                   lease_until=NOW - timedelta(hours=1)))
        work = {"transcript": [{"role": "user", "text": "I run."}], "role": None, "person_name": None,
                "language": None, "attributes": None}
        conn.execute(insert(consolidation_jobs).values(
            owner_id="ada", scope="default", id="job1", ref=f"talk {WORD} 2", state="queued", attempts=0,
            work=seal(json.dumps(work)), created_at=NOW, updated_at=NOW))
        conn.execute(insert(memories).values(id="m1", revision=2, text=seal("Has a cat called Miso"),
                                             sources=sources(f"talk {WORD} 1"), **memory))
        conn.execute(insert(memories).values(id="m2", revision=1, text=seal("Likes tea"),
                                             sources=json.dumps([{"kind": "api", "ref": "c-1"}]), **memory))
        conn.execute(insert(memory_revisions).values(
            memory_id="m1", revision=1, owner_id="ada", scope="default", text=seal("Has a cat"), kind="fact",
            importance=3, origin="inferred", sources=sources(f"talk {WORD} 0"), op="create", written_at=NOW))


def check_0018(engine: Engine, keyed: bool) -> None:
    cipher = FernetCipher([generate_key()]) if keyed else None
    secret = cipher.digest_key if cipher is not None else None
    upgrade(engine, "0017")
    kept_before(engine, cipher)
    if cipher is not None:
        assert check_keys(engine, cipher)  # the first process with keys leaves its probe
        with pytest.raises(KeysNeeded, match="MEMORY_ENCRYPTION_KEYS"):
            upgrade(engine)  # not without the keys' secret: nothing changed
        with engine.connect() as conn:
            assert f"talk {WORD} 1" in conn.execute(select(consolidation_refs.c.ref)).scalars().all()
    upgrade(engine, words_secret=secret)

    def key(ref: str) -> str:
        return conversation_key(ref, secret)

    with engine.connect() as conn:
        claims = {(r.owner_id, r.ref) for r in conn.execute(select(consolidation_refs))}
        jobs = conn.execute(select(consolidation_jobs.c.ref)).scalars().all()
        kept = dict(conn.execute(select(memories.c.id, memories.c.sources)).all())
        earlier = conn.execute(select(memory_revisions.c.sources)).scalars().all()
    assert claims == {("ada", key(f"talk {WORD} 1")), ("bob", key(f"talk {WORD} 1"))}
    assert jobs == [key(f"talk {WORD} 2")]
    assert json.loads(kept["m1"]) == json.loads(sources(key(f"talk {WORD} 1")))
    assert json.loads(kept["m2"]) == [{"kind": "api", "ref": "c-1"}]
    assert [json.loads(e) for e in earlier] == [json.loads(sources(key(f"talk {WORD} 0")))]
    # Learnt once, across the upgrade.
    service = MemoryService(SqlStore(engine, cipher=cipher), llm=Model())
    assert service.consolidate(PLACE, "I adopted a cat called Miso.", f"talk {WORD} 1").status == "already"
    assert service.run_job("job1") is None
    assert service.job(PLACE, "job1").result["status"] == "done"  # type: ignore[index]
    assert service.consolidate(PLACE, "I run.", f"talk {WORD} 2").status == "already"
    # A claim its worker left (bob's) is taken over under its key, as before the upgrade.
    bob = service.consolidate(Place("bob", "default"), "I run.", f"talk {WORD} 1")
    assert (bob.status, bob.added) == ("done", 1)


@pytest.mark.parametrize("keyed", [False, True], ids=["plain", "keyed"])
def test_sqlite_0018_keeps_refs_as_conversation_keys_and_learns_once(sqlite_blank_engine: Engine, keyed: bool) -> None:
    check_0018(sqlite_blank_engine, keyed)


@pytest.mark.postgres
@pytest.mark.parametrize("keyed", [False, True], ids=["plain", "keyed"])
def test_postgres_0018_keeps_refs_as_conversation_keys_and_learns_once(pg_blank_engine: Engine, keyed: bool) -> None:
    check_0018(pg_blank_engine, keyed)
