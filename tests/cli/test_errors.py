"""Every error of the command line is one line on standard error and a non-zero exit (issue 38, item
11): a file that cannot be read, a database not migrated or not reachable, an owner id that is not
one, and a bug of ours too, which still says what it is and where, without a word the database
holds, and prints its whole traceback when the operator asks for it (MEMORY_CLI_TRACEBACK=1)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from sqlalchemy import text

from portal.adapters.cipher import generate_key
from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import head_revision, upgrade
from portal.cli.errors import errors_as_one_line

from .runner import Ran, run, run_console_script


@pytest.fixture
def bare(tmp_path: Path) -> dict[str, str]:
    """An operator's shell on a database nobody migrated yet."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    base.update(MEMORY_INSTANCE_PATH=str(tmp_path / "instance"), MEMORY_EMBEDDER="none")
    return base


@pytest.fixture
def env(bare: dict[str, str]) -> dict[str, str]:
    for args in (["db", "upgrade"], ["tenant", "create", "Acme"]):
        assert run(args, bare).returncode == 0
    return bare


def one_line(done: Ran) -> str:
    """The error's one line (and nothing on standard output), as the operator sees it."""
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert done.stdout == ""
    return lines[0]


def test_a_file_that_is_missing_or_a_folder_is_one_line_naming_it(env: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    said = one_line(run(["import", "ada", str(missing), "--tenant", "Acme"], env))
    assert said == f"Error: {missing}: No such file or directory"
    said = one_line(run(["import", "ada", str(tmp_path), "--tenant", "Acme"], env))
    assert said == f"Error: {tmp_path}: Is a directory"
    as_json = run(["import", "ada", str(missing), "--tenant", "Acme", "--json"], env)
    assert as_json.returncode == 1 and "Traceback" not in as_json.stderr
    assert json.loads(as_json.stdout) == {"ok": False, "code": "file_error",
                                          "message": f"{missing}: No such file or directory"}


@pytest.mark.parametrize("args", [
    ["export", "ada", "--tenant", "Acme"], ["export", "ada"], ["purge-owner", "ada", "--yes"],
    ["forget-matching", "ada", "tea", "--tenant", "Acme"], ["tenant", "list"], ["tenant", "create", "Acme"],
    ["api-key", "list"], ["user", "list"], ["prune"],
])
def test_a_database_not_migrated_is_one_line_saying_what_to_run(bare: dict[str, str], args: list[str]) -> None:
    said = one_line(run(args, bare))
    assert said == "Error: the database has no schema yet: run `memory-portal db upgrade`", said


def test_a_database_behind_the_code_is_one_line_naming_both_revisions(bare: dict[str, str]) -> None:
    engine = make_engine(f"sqlite:///{bare['MEMORY_INSTANCE_PATH']}/memory.db")
    try:
        upgrade(engine, "0009")  # as an older release left it: no connected apps, no jobs yet
    finally:
        engine.dispose()
    said = one_line(run(["export", "ada", "--tenant", "Acme"], bare))
    assert said == (f"Error: the database is at revision 0009 and this code needs {head_revision()}: "
                    "run `memory-portal db upgrade`"), said


def test_a_database_a_newer_release_migrated_is_one_line_not_asking_for_an_upgrade(bare: dict[str, str]) -> None:
    engine = make_engine(f"sqlite:///{bare['MEMORY_INSTANCE_PATH']}/memory.db")
    try:
        upgrade(engine, "0009")
        with engine.begin() as conn:  # stamped by a release this code does not know
            conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    finally:
        engine.dispose()
    said = one_line(run(["export", "ada", "--tenant", "Acme"], bare))
    assert said == (f"Error: the database is at revision 0099, newer than this code's {head_revision()}: "
                    "run the release that migrated it"), said


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_database_out_of_reach_is_one_line_without_its_password(bare: dict[str, str]) -> None:
    url = f"postgresql://portal:s3cret-pa55word@127.0.0.1:{free_port()}/memory"
    shell = {**bare, "MEMORY_DATABASE_URL": url, "MEMORY_ENCRYPTION_KEYS": generate_key()}
    for args in (["export", "ada", "--tenant", "Acme"], ["tenant", "list"]):
        said = one_line(run(args, shell))
        assert said.startswith("Error: cannot reach the database: "), said
        assert "Connection refused" in said or "connection failed" in said, said
        assert "s3cret-pa55word" not in said
    # A real process: nothing else on standard error either (no log line before the error's).
    assert one_line(run_console_script(["user", "list"], shell)) == said


@pytest.mark.parametrize("owner", ["a/b", "..", "x" * 201, "ada\x00"])
def test_an_owner_id_that_is_not_one_says_so(env: dict[str, str], owner: str) -> None:
    for args in (["export", owner, "--tenant", "Acme"], ["purge-owner", owner, "--tenant", "Acme", "--yes"],
                 ["forget-matching", owner, "tea", "--tenant", "Acme"]):
        assert one_line(run(args, env)) == "Error: That owner id is not valid."
    assert one_line(run(["export", " ", "--tenant", "Acme"], env)) == "Error: No person was given."


def broken(words: str) -> click.Command:
    """A command with a bug of ours in it: it fails on a person's words, as a real bug might."""

    @click.command("broken")
    def command() -> None:
        kept = {"Keeps bees": 1}
        kept[words]  # noqa: B018 - the bug: a KeyError whose text is what the person said

    return errors_as_one_line(command)


def test_a_bug_is_one_line_naming_what_and_where_but_no_word_and_the_traceback_on_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    words = "my sister Anna's new address"
    monkeypatch.delenv("MEMORY_CLI_TRACEBACK", raising=False)
    done = CliRunner().invoke(broken(words), [])
    assert done.exit_code == 70 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("Error: unexpected KeyError at tests/cli/test_errors.py:"), line
    assert "a bug" in line and "MEMORY_CLI_TRACEBACK=1" in line
    assert "Anna" not in line
    monkeypatch.setenv("MEMORY_CLI_TRACEBACK", "1")
    shown = CliRunner().invoke(broken(words), [])
    assert shown.exit_code == 1 and isinstance(shown.exception, KeyError)  # the whole traceback, as Python prints it
