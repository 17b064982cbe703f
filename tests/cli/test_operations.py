"""Operations commands run as an operator would: `prune` (retention) and `rotate-keys`, each a real
process on a real SQLite file."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from portal.adapters.cipher import CipherError, FernetCipher, generate_key
from portal.adapters.sql.tables import consolidation_jobs, idempotency_receipts, memories, memory_revisions
from portal.bootstrap import Runtime, build_runtime
from portal.cli import main
from portal.config import load_config
from portal.domain.apps import App
from portal.domain.jobs import Job
from portal.domain.types import Place, Saved
from portal.services.idempotency import Answer, once
from portal.services.memory_service import MemoryService

from ..expect import refused

BIN = Path(sys.executable).parent / "memory-portal"
HERE = Place("ada", "tenant-1")
DAY = timedelta(days=1)


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), *args], env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def bare_env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    base.update(MEMORY_INSTANCE_PATH=str(tmp_path / "instance"), MEMORY_EMBEDDER="none")
    return base


@pytest.fixture
def env(bare_env: dict[str, str]) -> dict[str, str]:
    assert run(["db", "upgrade"], bare_env).returncode == 0
    return bare_env


@pytest.fixture
def runtime_for(env: dict[str, str]) -> Iterator[Callable[..., Runtime]]:
    made: list[Runtime] = []

    def build(**variables: str) -> Runtime:
        runtime = build_runtime(load_config({**env, **variables}), embedder=None, llm=None)
        made.append(runtime)
        return runtime

    yield build
    for runtime in made:
        runtime.dispose()


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


# ---------------------------------------------------------------------------------------- prune


def test_prune_deletes_old_history_receipts_and_archived_memories(env, runtime_for) -> None:
    runtime = runtime_for()
    clock = Clock(datetime.now(UTC) - 200 * DAY)
    service = MemoryService(runtime.store, clock=clock)
    settled = service.remember(HERE, "Lives in Lyon")
    assert isinstance(settled, Saved)
    assert service.update(HERE, settled.memory.id, text="Lives in Paris").ok
    once(runtime.store, HERE, "signup-1", "d", lambda: Answer(201, {"ok": True}), clock=clock)
    bot = service.for_app(App("app-bot", "Bot"))
    bot.get(HERE, settled.memory.id)  # a use 200 days ago: past MEMORY_APP_USES_DAYS' 180
    clock.now = datetime.now(UTC) - DAY
    recent = service.remember(HERE, "Works as a nurse")
    assert isinstance(recent, Saved)
    bot.get(HERE, recent.memory.id)
    assert service.update(HERE, recent.memory.id, text="Works as a midwife").ok
    once(runtime.store, HERE, "signup-2", "d", lambda: Answer(201, {"ok": True}), clock=clock)

    result = run(["prune", "--history-older-than", "90d", "--receipts-older-than", "720h"], env)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"revisions": 1, "receipts": 1, "memories": 0, "app_uses": 1, "summaries": 0, "jobs": 0}
    with runtime.store.read(HERE) as tx:
        assert [u.memory_id for u in tx.app_uses()] == [recent.memory.id]
    assert [r.text for r in runtime.service.history(HERE, settled.memory.id)] == ["Lives in Paris"]
    assert len(runtime.service.history(HERE, recent.memory.id)) == 2  # still undoable
    with runtime.store.read(HERE) as tx:
        assert tx.get_receipt("signup-1") is None and tx.get_receipt("signup-2") is not None
    again = run(["prune", "--history-older-than", "90d", "--receipts-older-than", "30d", "--archived-older-than", "180d"], env)
    assert again.returncode == 0 and json.loads(again.stdout) == {"revisions": 0, "receipts": 0, "memories": 0,
                                                          "app_uses": 0, "summaries": 0, "jobs": 0}


def test_prune_erases_long_archived_memories(env, runtime_for) -> None:
    runtime = runtime_for()
    clock = Clock(datetime.now(UTC) - 200 * DAY)
    service = MemoryService(runtime.store, clock=clock)
    old = service.remember(HERE, "Had a cold in January")
    assert isinstance(old, Saved)
    with runtime.store.write(HERE) as tx:
        tx.set_state([old.memory.id], "archived")
        tx.commit()

    result = run(["prune", "--archived-older-than", "180d"], env)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"revisions": 0, "receipts": 0, "memories": 1, "app_uses": 0, "summaries": 0, "jobs": 0}
    assert runtime.service.list(HERE, state="all").items == []
    with refused("not_found"):
        runtime.service.undo(HERE, old.memory.id)


@pytest.mark.parametrize("value", ["90", "90x", "0d", "-1d", "1.5d", "d", "90 days", "1000000d", ""])
def test_prune_refuses_a_bad_period_naming_the_option(value: str) -> None:
    # Parsing happens before any database is opened, so click's in-process runner sees all of it.
    for option in ("--history-older-than", "--receipts-older-than", "--archived-older-than"):
        result = CliRunner().invoke(main, ["prune", option, value])
        assert result.exit_code == 2, result.output
        assert f"Invalid value for '{option}'" in result.output and "90d" in result.output, result.output


def test_prune_refuses_a_bad_period_from_the_command_line(bare_env) -> None:
    result = run(["prune", "--receipts-older-than", "30"], bare_env)
    assert result.returncode == 2 and "Invalid value for '--receipts-older-than'" in result.stderr
    assert "like 90d, 12h or 30m" in result.stderr and "Traceback" not in result.stderr


def test_prune_without_a_period_still_erases_the_words_whose_time_is_over(env) -> None:
    result = run(["prune"], {**env, "MEMORY_APP_USES_DAYS": "0"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"revisions": 0, "receipts": 0, "memories": 0, "app_uses": 0, "summaries": 0,
                                         "jobs": 0}


def test_prune_alone_applies_the_configured_retention_of_the_apps_uses(env) -> None:
    result = run(["prune"], env)  # MEMORY_APP_USES_DAYS: 180 by default
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"revisions": 0, "receipts": 0, "memories": 0, "app_uses": 0, "summaries": 0,
                                         "jobs": 0}


# ---------------------------------------------------------------------------------------- rotate-keys


def test_rotate_keys_moves_everything_to_the_first_key(env, runtime_for) -> None:
    key_a, key_b = generate_key(), generate_key()
    old = runtime_for(MEMORY_ENCRYPTION_KEYS=key_a)
    texts = ["Likes green tea", "Lives in Lyon", "Works as a nurse"]
    ids = []
    for text in texts:
        saved = old.service.remember(HERE, text)
        assert isinstance(saved, Saved)
        ids.append(saved.memory.id)
    assert old.service.update(HERE, ids[1], text="Lives in Paris").ok
    assert old.service.update(HERE, ids[2], attributes={"metadata": {"ward": "Maternity"}}).ok  # kept with the memory
    once(old.store, HERE, "signup-1", "d", lambda: Answer(201, {"memory": {"id": ids[0], "revision": 1, "text": texts[0]}}))
    # A conversation waiting to be learnt, and a job over whose summary its app has not read yet.
    now = old.service.clock()
    waiting = Job("job-waiting", HERE.owner_id, HERE.scope, "conv-1", "queued", 0, now, now,
                  work={"transcript": "I keep bees"})
    over = Job("job-over", HERE.owner_id, HERE.scope, "conv-2", "done", 1, now, now, result={"status": "done"},
               summary="Talked about bees")
    with old.store.write(HERE) as tx:
        tx.put_job(waiting)
        tx.put_job(over)
        tx.commit()

    rotated = run(["rotate-keys", "--batch-size", "2"], {**env, "MEMORY_ENCRYPTION_KEYS": f"{key_b},{key_a}"})

    assert rotated.returncode == 0, rotated.stderr
    assert json.loads(rotated.stdout) == {"memories": 3, "revisions": 1, "receipts": 1, "jobs": 1, "summaries": 1,
                                          "attributes": 1, "unchanged": 0}
    only_b, only_a = FernetCipher([key_b]), FernetCipher([key_a])
    with old.engine.connect() as conn:
        tokens = [
            *conn.execute(select(memories.c.text)).scalars(),
            *conn.execute(select(memory_revisions.c.text)).scalars(),
            *conn.execute(select(idempotency_receipts.c.response)).scalars(),
            *conn.execute(select(consolidation_jobs.c.work).where(consolidation_jobs.c.work.is_not(None))).scalars(),
            *conn.execute(select(consolidation_jobs.c.summary).where(consolidation_jobs.c.summary.is_not(None))).scalars(),
            *conn.execute(select(memories.c.attributes).where(memories.c.attributes.is_not(None))).scalars(),
        ]
    assert len(tokens) == 8
    plain = [only_b.decrypt(token) for token in tokens]
    assert {"Likes green tea", "Lives in Paris", "Works as a nurse", "Lives in Lyon"} <= set(plain)
    assert all(text not in token for token in tokens for text in [*texts, "Maternity"])
    for token in tokens:
        with pytest.raises(CipherError):
            only_a.decrypt(token)

    # The old key is dropped: everything reads, and an exact repeat is still found as a duplicate.
    new = runtime_for(MEMORY_ENCRYPTION_KEYS=key_b)
    assert {m.text for m in new.service.list(HERE).items} == {"Likes green tea", "Lives in Paris", "Works as a nurse"}
    with new.store.read(HERE) as tx:
        assert tx.get_job("job-waiting") == waiting and tx.get_job("job-over") == over
    again = new.service.remember(HERE, "likes GREEN tea")
    assert isinstance(again, Saved) and again.replaced_id == ids[0]
    assert len(new.service.list(HERE).items) == 3
    assert run(["rotate-keys"], {**env, "MEMORY_ENCRYPTION_KEYS": key_b}).stdout.strip() == json.dumps(
        {"memories": 0, "revisions": 0, "receipts": 0, "jobs": 0, "summaries": 0, "attributes": 0, "unchanged": 9}
    )


def test_rotate_keys_stops_clearly_when_a_key_is_missing_or_none_is_set(env, runtime_for) -> None:
    key_a = generate_key()
    saved = runtime_for(MEMORY_ENCRYPTION_KEYS=key_a).service.remember(HERE, "Has a cat called Miso")
    assert isinstance(saved, Saved)
    dropped_too_early = run(["rotate-keys"], {**env, "MEMORY_ENCRYPTION_KEYS": generate_key()})
    assert dropped_too_early.returncode == 1
    assert saved.memory.id in dropped_too_early.stderr and "MEMORY_ENCRYPTION_KEYS" in dropped_too_early.stderr
    assert "Miso" not in dropped_too_early.stderr + dropped_too_early.stdout and "Traceback" not in dropped_too_early.stderr
    unset = run(["rotate-keys"], env)
    assert unset.returncode == 1 and "MEMORY_ENCRYPTION_KEYS is not set" in unset.stderr


# ---------------------------------------------------------------------------------------- VACUUM


def test_a_vacuum_leaves_word_recall_as_it_was(env, runtime_for, tmp_path: Path) -> None:
    """No full-text index keyed by row ids: a VACUUM, which may renumber them, changes no answer."""
    runtime = runtime_for()
    kept = []
    for text in ("Plays the cello", "Lives in Lyon", "Keeps a hive on the roof", "Runs in Lisbon"):
        saved = runtime.service.remember(HERE, text)
        assert isinstance(saved, Saved)
        kept.append(saved.memory)
    runtime.service.forget(HERE, kept[0].id)
    runtime.service.forget(HERE, kept[1].id)
    runtime.dispose()
    with sqlite3.connect(tmp_path / "instance" / "memory.db") as conn:
        conn.execute("VACUUM")
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name LIKE 'memories_fts%'").fetchone() == (0,)
    fresh = runtime_for()
    assert [h.memory.id for h in fresh.service.recall(HERE, "roof")] == [kept[2].id]
    assert [h.memory.id for h in fresh.service.recall(HERE, "lisbon")] == [kept[3].id]
    assert fresh.service.recall(HERE, "cello") == []
