"""`memory-portal user create` without `--language` stores no choice (issue 38, item 2): the person
then reads the portal in their browser's language until they choose one; with `--language` that
choice is kept. Run in this process through click's runner (tests/cli/runner.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from portal.adapters.sql.accounts import Accounts
from portal.adapters.sql.engine import make_engine

from .runner import run


@pytest.mark.usefixtures("cheap_password_hashes")
def test_an_account_made_without_a_language_has_none_until_its_person_chooses(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(MEMORY_INSTANCE_PATH=str(tmp_path / "instance"), MEMORY_EMBEDDER="none")
    assert run(["db", "upgrade"], env).returncode == 0
    assert run(["tenant", "create", "Acme"], env).returncode == 0
    base = ["user", "create", "--tenant", "Acme", "--password-stdin"]
    assert run([*base, "--email", "ada@acme.example", "--name", "Ada"], env, stdin="a long enough password\n").returncode == 0
    made = run([*base, "--email", "bo@acme.example", "--name", "Bo", "--language", "fr"], env,
               stdin="a long enough password\n")
    assert made.returncode == 0, made.stderr
    assert "--language [en|fr]" in run(["user", "create", "--help"], env).stdout
    assert "default: en" not in " ".join(run(["user", "create", "--help"], env).stdout.split())
    engine = make_engine(f"sqlite:///{tmp_path / 'instance' / 'memory.db'}")
    try:
        accounts = Accounts(engine)
        by_email = {u.email: u.language for u in accounts.find("acme.example")}
    finally:
        engine.dispose()
    assert by_email == {"ada@acme.example": None, "bo@acme.example": "fr"}
