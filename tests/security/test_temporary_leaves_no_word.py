"""A conversation that teaches nothing leaves no word behind (issue 29, item 5): after temporary
consolidations sent through the API every way a host may send one (waiting, `"wait": false`,
`Prefer: respond-async`, an Idempotency-Key and its replay), by an app that also recalls, none of
the conversation's words is in any table (read with the store's key where it encrypts), in the job
queue, in the SQLite files beside the database, in PostgreSQL's files and write-ahead log written
since, in the recall cache the process keeps, or in any log line. The same scans find the words of
the same conversation sent to be learnt in the background (its job keeps the transcript until it
runs): they can fail. SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from portal.domain.types import Place

from ..api import conftest as api_fixtures
from ..api.conftest import API, World
from .scans import strings_in, words_in_files, words_in_postgres_files, words_in_tables

sqlite_engine, make_world = api_fixtures.sqlite_engine, api_fixtures.make_world

WORDS = ["zqhelmurt", "qjtarnevo"]  # each in the conversation only
TRANSCRIPT = [{"role": "user", "text": f"Keep this between us: my sister {WORDS[0]} is moving."},
              {"role": "assistant", "text": f"I will not remember {WORDS[1]} or anything of this."}]
STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=STORES)
def world(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> World:
    return make_world(request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine"))


def send(world: World, ref: str, temporary: bool = True, prefer: bool = False, **body: object) -> dict[str, object]:
    headers = world.auth(**({"Prefer": "respond-async"} if prefer else {}))
    answer = world.raw().post(f"{API}/people/ada/consolidate", headers={**headers, **body.pop("headers", {})},  # type: ignore[dict-item]
                              json={"transcript": TRANSCRIPT, "ref": ref, "temporary": temporary, **body})
    assert answer.status_code in (200, 202), answer.json
    return answer.json  # type: ignore[no-any-return]


def leaks(world: World, started: float) -> list[str]:
    """Every place the scans find a word: tables, the queue, the database's files, the recall cache."""
    engine, store = world.runtime.engine, world.runtime.store
    assert store.settle(30)
    found = words_in_tables(engine, WORDS, decrypt=store.cipher.decrypt if store.cipher is not None else None)
    if engine.dialect.name == "sqlite":
        found += words_in_files(Path(str(engine.url.database)), WORDS, "after temporary conversations")
    else:
        found += words_in_postgres_files(engine, WORDS, "after a CHECKPOINT", since=started)
    cache = getattr(store, "recall_cache", None)  # what the process keeps of a place between requests
    kept = [s.lower() for s in strings_in(cache)] if cache is not None else []
    found += [f"the recall cache holds {w!r}" for w in WORDS if any(w in s for s in kept)]
    return found


def test_temporary_conversations_leave_no_word_anywhere(world: World, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    started = time.time()
    with world.client() as memory:
        memory.remember("ada", "Prefers green tea")
        assert [h.memory.text for h in memory.recall("ada", "green tea")] == ["Prefers green tea"]
    answers = [send(world, "conv-1"), send(world, "conv-2", wait=False), send(world, "conv-3", prefer=True),
               send(world, "conv-4", headers={"Idempotency-Key": "k-1"}),
               send(world, "conv-4", headers={"Idempotency-Key": "k-1"})]
    assert [a["status"] for a in answers] == ["temporary"] * 5
    assert world.runtime.queue.pending() == 0
    assert leaks(world, started) == []
    said = [line for line in caplog.messages if any(w in line.lower() for w in WORDS)]
    assert said == []

    # the scans can fail: the same conversation sent to be learnt later is kept in its job until it runs
    assert send(world, "conv-5", temporary=False, wait=False)["state"] == "queued"
    found = leaks(world, started)
    assert any(line.startswith("consolidation_jobs holds") for line in found), found


def test_odd_bytes_and_another_tenant_s_key_count_nothing_where_they_should_not(world: World) -> None:
    """A NUL or a lone surrogate in the ref or the transcript is refused before anything runs (400
    `invalid_text`, no word echoed, no use counted); another tenant's key reaches its own tenant's
    `ada`, never this one's."""
    here = Place("ada", world.tenant_a)
    for ref, text in (("conv\u0000", "hello"), ("conv-\ud800", "hello"), ("c1", "zqhelmurt \ud800"),
                      ("c1", "zqhelmurt \u0000")):
        raw = json.dumps({"transcript": [{"role": "user", "text": text}], "ref": ref, "temporary": True})
        answer = world.raw().post(f"{API}/people/ada/consolidate", data=raw, headers=world.auth(),
                                  content_type="application/json")
        assert (answer.status_code, answer.json["code"]) == (400, "invalid_text")
        assert "zqhelmurt" not in answer.get_data(as_text=True)
    assert world.runtime.service.connected_apps(here, {}) == []
    assert send(world, "conv-b", headers={"Authorization": f"Bearer {world.keys['b']}"})["status"] == "temporary"
    assert world.runtime.service.connected_apps(here, {}) == []
    elsewhere = world.runtime.service.connected_apps(Place("ada", world.tenant_b), {})
    assert [s.temporary for s in elsewhere] == [1]
