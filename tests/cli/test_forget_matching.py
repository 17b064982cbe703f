"""`memory-portal forget-matching OWNER_ID QUERY` (issue 29, item 4): the preview alone prints ids and
counts and changes nothing; `--yes` forgets exactly what it previewed, audited as the operator's;
neither prints a word of the memories; a subject it cannot take is a one-line error with its code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.store import SqlStore
from portal.domain.types import Place
from portal.ports import Filters
from portal.services.memory_service import MemoryService

from .runner import run


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    base.update(MEMORY_INSTANCE_PATH=str(tmp_path / "instance"), MEMORY_EMBEDDER="none")
    assert run(["db", "upgrade"], base).returncode == 0
    return base


def test_a_preview_then_yes_forgets_what_matches_and_prints_no_word(env: dict[str, str]) -> None:
    tenant = run(["tenant", "create", "Acme"], env).stdout.strip()
    engine = make_engine(f"sqlite:///{env['MEMORY_INSTANCE_PATH']}/memory.db")
    try:
        service = MemoryService(SqlStore(engine))
        ada = Place("ada", tenant)
        ids = {t: service.remember(ada, t).memory.id for t in ("Likes green tea", "Drinks tea at four", "Runs on Mondays")}
        previewed = run(["forget-matching", "ada", "tea", "--tenant", "Acme"], env)
        assert previewed.returncode == 0, previewed.stderr
        shown = json.loads(previewed.stdout)
        assert (shown["matched"], shown["more"], shown["dry_run"]) == (2, False, True)
        assert sorted(shown["ids"]) == sorted([ids["Likes green tea"], ids["Drinks tea at four"]])
        assert len(service.list(ada).items) == 3  # a preview changes nothing
        done = run(["forget-matching", "ada", "tea", "--tenant", "Acme", "--yes"], env)
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert (answer["memories"], answer["changed"], answer["more"]) == (2, [], False)
        assert [m.text for m in service.list(ada).items] == ["Runs on Mondays"]
        assert "tea" not in previewed.stdout + done.stdout and "Likes" not in previewed.stdout + done.stdout
        entries = [e for e in SqlStore(engine).audit_trail() if e.action == "person.forgot_matching"]
        assert [(e.actor_role, e.subject_owner_id, e.counts) for e in entries] == [
            ("operator", "ada", {"memories": 2, "revisions": 0})]
        with SqlStore(engine).read(ada) as tx:
            assert len(tx.list(Filters(state=None))) == 1
    finally:
        engine.dispose()


def test_a_subject_it_cannot_take_is_a_one_line_error(env: dict[str, str]) -> None:
    run(["tenant", "create", "Acme"], env)
    blank = run(["forget-matching", "ada", "   ", "--tenant", "Acme", "--yes"], env)
    assert blank.returncode == 1 and "Say what to forget about" in blank.stderr and "Traceback" not in blank.stderr
    nowhere = run(["forget-matching", "ada", "tea", "--tenant", "Initech"], env)
    assert nowhere.returncode != 0 and "Initech" in nowhere.stderr
