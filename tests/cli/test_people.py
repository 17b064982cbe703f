"""A person named by their owner id on the command line, as staff answering a request meet it (issue
38, items 3 and 4), on SQLite and on PostgreSQL.

- `export OWNER`, `forget-matching OWNER ...` and `purge-owner OWNER` without `--tenant` act only
  when there is a single tenant; with several they refuse in one line saying how to choose (naming
  the one tenant holding the owner id, if one does) and never guess: they used to answer an empty
  document, or "matched 0", from a place no tenant has, and then to take the one tenant keeping
  anything, which may be another tenant's namesake (review1 of issue 38).
- `export` carries the person's account, as the staff console's export does (the same code), and
  is audited as the operator's.
- `purge-owner` erases the person as the staff console's erasure does: their account goes with
  their data, their open requests are answered, in one unit of work with its audit entries.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from portal.bootstrap import Runtime, build_runtime
from portal.config import load_config
from portal.domain.people import User

from .databases import STORES, copied, prepared
from .runner import Ran, run

PASSWORD = "correct horse battery\n"
SETUP = ((["db", "upgrade"], None), (["tenant", "create", "Acme"], None), (["tenant", "create", "Globex"], None),
         (["user", "create", "--email", "ada@acme.example", "--name", "Ada Lovelace", "--tenant", "Acme",
           "--owner-id", "ada", "--password-stdin"], PASSWORD),
         (["user", "create", "--email", "root@acme.example", "--name", "Root", "--tenant", "Acme", "--role", "admin",
           "--password-stdin"], PASSWORD))


@pytest.fixture(scope="module", params=STORES)
def prepared_env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Two tenants, Acme and Globex; Ada's account in Acme (owner id "ada") and an admin's."""
    with prepared(request, tmp_path_factory.mktemp("prepared"), SETUP) as shell:
        yield shell


@pytest.fixture
def env(request: pytest.FixtureRequest, prepared_env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    with copied(request, prepared_env, tmp_path) as shell:
        yield shell


@pytest.fixture
def runtime(env: dict[str, str]) -> Iterator[Runtime]:
    built = build_runtime(load_config(env), embedder=None, llm=None)
    yield built
    built.dispose()


def remember(env: dict[str, str], tmp_path: Path, owner: str, tenant: str, *texts: str) -> None:
    notes = tmp_path / f"{owner}-{tenant}.txt"
    notes.write_text("".join(f"{t}\n" for t in texts), encoding="utf-8")
    done = run(["import", owner, str(notes), "--tenant", tenant], env)
    assert done.returncode == 0 and json.loads(done.stdout)["added"] == len(texts), done.stderr


def one_line(done: Ran) -> str:
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr, done
    (line,) = done.stderr.strip().splitlines()
    return line


def account(runtime: Runtime, email: str) -> User | None:
    found = [u for u in runtime.accounts.find(email) if u.email == email]
    return found[0] if found else None


def tenant_id(runtime: Runtime, name: str) -> str:
    found = runtime.tenants.find(name)
    assert found is not None
    return found.id


# ----------------------------------------------------------------------------- no --tenant


def test_export_without_a_tenant_names_the_one_tenant_keeping_the_person_and_hands_over_nothing(
        env: dict[str, str], runtime: Runtime, tmp_path: Path) -> None:
    remember(env, tmp_path, "ada", "Acme", "Keeps bees", "Drinks green tea")
    said = one_line(run(["export", "ada"], env))
    assert said == ("Error: 'ada' is kept only in tenant Acme (of 2 tenants; owner ids are per tenant): "
                    "add --tenant Acme if that is the person"), said
    done = run(["export", "ada", "--tenant", "Acme"], env)  # as the line says
    doc = json.loads(done.stdout)
    assert doc["scope"] == tenant_id(runtime, "Acme")
    assert sorted(m["text"] for m in doc["memories"]) == ["Drinks green tea", "Keeps bees"]
    assert doc["account"]["email"] == "ada@acme.example"


def test_an_account_alone_is_enough_to_name_the_persons_tenant(env: dict[str, str]) -> None:
    said = one_line(run(["export", "ada"], env))  # nothing kept yet, but Ada has an account in Acme
    assert said.endswith("add --tenant Acme if that is the person"), said


def test_export_and_forget_matching_without_a_tenant_refuse_a_person_of_several_tenants_or_of_none(
        env: dict[str, str], tmp_path: Path) -> None:
    remember(env, tmp_path, "ada", "Acme", "Keeps bees")
    remember(env, tmp_path, "ada", "Globex", "Plays the cello")
    for args in (["export", "ada"], ["forget-matching", "ada", "cello"], ["forget-matching", "ada", "cello", "--yes"],
                 ["purge-owner", "ada", "--yes"]):
        said = one_line(run(args, env))
        assert said == "Error: 'ada' is kept in 2 tenants (Acme, Globex): say which with --tenant", said
    for args in (["export", "bob"], ["forget-matching", "bob", "cello"], ["purge-owner", "bob", "--yes"]):
        said = one_line(run(args, env))
        assert said == "Error: no tenant keeps anything about 'bob': check the owner id, or say which tenant with --tenant"
    kept = json.loads(run(["export", "ada", "--tenant", "Globex"], env).stdout)
    assert [m["text"] for m in kept["memories"]] == ["Plays the cello"]  # nothing was forgotten
    assert kept["account"] is None  # Ada's account is Acme's: Globex's "ada" is someone else


def test_forget_matching_without_a_tenant_forgets_nothing_even_in_the_one_tenant_keeping_the_person(
        env: dict[str, str], tmp_path: Path) -> None:
    remember(env, tmp_path, "bob", "Globex", "Plays the cello", "Keeps bees")
    for args in (["forget-matching", "bob", "cello"], ["forget-matching", "bob", "cello", "--yes"]):
        assert one_line(run(args, env)).endswith("add --tenant Globex if that is the person")
    done = run(["forget-matching", "bob", "cello", "--tenant", "Globex", "--yes"], env)
    assert done.returncode == 0 and json.loads(done.stdout)["memories"] == 1, done.stderr
    left = json.loads(run(["export", "bob", "--tenant", "Globex"], env).stdout)
    assert [m["text"] for m in left["memories"]] == ["Keeps bees"]


def test_with_a_single_tenant_there_is_nothing_to_choose(tmp_path: Path) -> None:
    shell = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")},
             "MEMORY_INSTANCE_PATH": str(tmp_path / "instance"), "MEMORY_EMBEDDER": "none"}
    for args in (["db", "upgrade"], ["tenant", "create", "Solo"]):
        assert run(args, shell).returncode == 0
    done = run(["export", "nobody-yet"], shell)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines() == ["nobody-yet: in tenant Solo, the only tenant"]
    assert json.loads(done.stdout)["memories"] == []
    notes = tmp_path / "notes.txt"
    notes.write_text("Keeps bees\n", encoding="utf-8")
    assert run(["import", "ada", str(notes), "--tenant", "Solo"], shell).returncode == 0
    purged = run(["purge-owner", "ada", "--yes"], shell)
    assert purged.returncode == 0 and json.loads(purged.stdout)["memories"] == 1, purged.stderr
    assert purged.stderr.strip().splitlines() == ["ada: in tenant Solo, the only tenant"]


def test_purge_owner_takes_one_tenant_or_every_tenant_not_both(env: dict[str, str]) -> None:
    done = run(["purge-owner", "ada", "--tenant", "Acme", "--every-tenant", "--yes"], env)
    assert done.returncode == 2 and done.stderr.strip().endswith("Error: give --tenant or --every-tenant, not both")


# ----------------------------------------------------------------------------- the account


def test_the_export_carries_the_account_as_the_staff_export_does_and_is_audited(
        env: dict[str, str], runtime: Runtime, tmp_path: Path) -> None:
    remember(env, tmp_path, "ada", "Acme", "Keeps bees")
    done = run(["export", "ada", "--tenant", "Acme"], env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    ada, admin = account(runtime, "ada@acme.example"), account(runtime, "root@acme.example")
    assert ada is not None and admin is not None
    staff = runtime.support.export(admin, ada.id, None)
    assert doc["account"] == staff["account"] == {  # made without --language: none chosen (issue 38, item 2)
        "email": "ada@acme.example", "name": "Ada Lovelace", "language": None, "created_at": ada.created_at.isoformat()}
    assert {k: v for k, v in doc.items() if k != "exported_at"} == {k: v for k, v in staff.items() if k != "exported_at"}
    entries = runtime.audit.query(None, action="access.exported")
    assert [(e.actor_role, e.subject_owner_id, e.counts) for e in entries] == [
        ("admin", "ada", {"memories": 1}), ("operator", "ada", {"memories": 1})]


def test_two_accounts_sharing_the_owner_id_are_refused_rather_than_one_handed_over_as_the_other(
        env: dict[str, str]) -> None:
    made = run(["user", "create", "--email", "ada2@acme.example", "--name", "Ada Two", "--tenant", "Acme",
                "--owner-id", "ada", "--password-stdin"], env, PASSWORD)
    assert made.returncode == 0, made.stderr
    said = one_line(run(["export", "ada", "--tenant", "Acme"], env))
    assert said == "Error: Several accounts share this owner id: export each one from the support console."


# ----------------------------------------------------------------------------- erasure


def test_purge_owner_erases_the_person_and_their_account_as_the_staff_erasure_does(
        env: dict[str, str], runtime: Runtime, tmp_path: Path) -> None:
    remember(env, tmp_path, "ada", "Acme", "Keeps bees", "Drinks green tea")
    remember(env, tmp_path, "ada", "Globex", "Plays the cello")  # Globex's own "ada": someone else
    ada = account(runtime, "ada@acme.example")
    assert ada is not None
    asked = runtime.support.person_asks_erasure(ada)  # Ada asked from the portal
    done = run(["purge-owner", "ada", "--tenant", "Acme", "--yes"], env)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)
    assert (counts["memories"], counts["accounts"]) == (2, 1)
    assert account(runtime, "ada@acme.example") is None
    assert runtime.accounts.authenticate("ada@acme.example", PASSWORD.strip()) is None
    request = runtime.support.erasures.get(asked.id)
    assert request is not None and (request.state, request.subject_user_id, request.counts) == ("completed", None, counts)
    acme = tenant_id(runtime, "Acme")
    trail = [(e.action, e.actor_role, e.scope, e.counts) for e in runtime.audit.query(None, subject="ada")
             if e.action in ("person.purged", "erasure.completed")]
    assert sorted(trail) == [("erasure.completed", "operator", acme, counts), ("person.purged", "operator", acme, counts)]
    kept = json.loads(run(["export", "ada", "--tenant", "Globex"], env).stdout)
    assert [m["text"] for m in kept["memories"]] == ["Plays the cello"]
    gone = json.loads(run(["export", "ada", "--tenant", "Acme"], env).stdout)
    assert (gone["memories"], gone["account"]) == ([], None)


def test_purge_owner_in_every_tenant_takes_every_account_of_the_owner_id(
        env: dict[str, str], runtime: Runtime, tmp_path: Path) -> None:
    made = run(["user", "create", "--email", "ada@globex.example", "--name", "Ada G", "--tenant", "Globex",
                "--owner-id", "ada", "--password-stdin"], env, PASSWORD)
    assert made.returncode == 0, made.stderr
    remember(env, tmp_path, "ada", "Globex", "Plays the cello")
    done = run(["purge-owner", "ada", "--every-tenant", "--yes"], env)  # said on purpose: without it, refused
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["accounts"] == 2
    assert account(runtime, "ada@acme.example") is None and account(runtime, "ada@globex.example") is None
    assert account(runtime, "root@acme.example") is not None
    (entry,) = runtime.audit.query(None, action="person.purged")
    assert (entry.actor_role, entry.scope, entry.counts["accounts"]) == ("operator", None, 2)  # type: ignore[index]
