"""`memory-portal import FILE` with a forged or damaged file, as an operator runs it, on SQLite and
on PostgreSQL: every file gets a sentence or counts by code, never a traceback, and the memories it
may keep are kept as any write would keep them. The commands run in this process through click's
runner (tests/cli/runner.py: the console script's own entry point, a traceback still shows)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .databases import STORES, copied, prepared
from .runner import Ran, run

SETUP = ((["db", "upgrade"], None), (["tenant", "create", "Acme"], None),
         (["user", "create", "--email", "bob@example.com", "--name", "Bob Durand", "--tenant", "Acme",
           "--role", "member", "--password-stdin"], "correct horse battery\n"))


@pytest.fixture(scope="module", params=STORES)
def prepared_env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """An operator's shell on a database the commands migrated, with the tenant Acme and Bob Durand's
    account: made once for each store; every test works on a copy of it (`env`)."""
    with prepared(request, tmp_path_factory.mktemp("prepared"), SETUP) as shell:
        yield shell


@pytest.fixture
def env(request: pytest.FixtureRequest, prepared_env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    with copied(request, prepared_env, tmp_path) as shell:
        yield shell


def import_file(env: dict[str, str], tmp_path: Path, content: Any, *flags: str) -> Ran:
    path = tmp_path / "memories.json"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return run(["import", str(path), "--owner", "ada", "--tenant", "Acme", *flags], env)


def test_a_forged_export_is_kept_as_far_as_a_write_would_keep_it(env: dict[str, str], tmp_path: Path) -> None:
    forged = {"format": "memory-portal/export", "version": 1, "memories": [
        {"text": "Keeps bees", "kind": "fact", "revision": 4, "sources": [{"kind": "import", "ref": "0" * 32}],
         "revisions": [
             {"revision": 3, "text": "Bob Durand has a penicillin allergy", "kind": "fact"},
             {"revision": 2, "text": "Keeps wasps", "kind": "k" * 80, "importance": 999999},
             {"revision": 2, "text": "Keeps ants", "kind": "fact"},
             {"revision": 1, "text": "Keeps moths", "kind": "fact"},
         ]},
        {"text": "Bob Durand likes jazz"},
    ]}
    preview = import_file(env, tmp_path, forged, "--dry-run")
    assert preview.returncode == 0 and "Traceback" not in preview.stderr, preview.stderr
    done = import_file(env, tmp_path, forged)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    counts = {"format": "memory-portal/export", "added": 1, "duplicates": 0, "refused": {"other_person": 1},
              "earlier_refused": {"other_person": 1, "invalid_revision": 1}}
    assert json.loads(preview.stdout) == {**counts, "dry_run": True}
    assert json.loads(done.stdout) == {**counts, "dry_run": False}
    [bees] = json.loads(run(["export", "ada", "--tenant", "Acme"], env).stdout)["memories"]
    assert [(r["revision"], r["text"], r["kind"], r["importance"]) for r in bees["revisions"]] == [
        (2, "Keeps wasps", "fact", 5), (1, "Keeps moths", "fact", 3)]
    assert [s["kind"] for s in bees["sources"]] == ["import"] and bees["sources"][0]["ref"] != "0" * 32


@pytest.mark.parametrize(("content", "sentence"), [
    (b"", "holds no memory"),
    (b"\xff\xfe bad", "cannot be read"),
    ({"format": "memory-portal/export", "version": 2, "memories": []}, "version this portal does not read"),
    ({"format": "memory-portal/export", "version": 1, "memories": [{"text": "Odd", "revisions": 5}]}, None),
    ({"format": "memory-portal/export", "version": 1, "memories": [
        {"text": "Odd", "revision": 2, "revisions": [{"revision": "1", "text": "a"}, {"revision": 1.5, "text": "b"}]}]}, None),
])
def test_a_damaged_file_gets_a_sentence_or_counts_never_a_traceback(env: dict[str, str], tmp_path: Path, content: Any,
                                                                    sentence: str | None) -> None:
    done = import_file(env, tmp_path, content)
    assert "Traceback" not in done.stderr, done.stderr
    if sentence is None:
        assert done.returncode == 0 and json.loads(done.stdout)["added"] == 1, done.stderr
    else:
        assert done.returncode == 1 and sentence in done.stderr
        as_json = import_file(env, tmp_path, content, "--json")
        assert as_json.returncode == 1 and json.loads(as_json.stdout)["code"].startswith("import_")
