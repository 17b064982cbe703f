"""The `memory-portal` command line, run as a person would run it, on a real database: most
commands in this process through click's runner (tests/cli/runner.py), and the installed console
script in a real process where that is the point (it starts, `serve`, `flask --app portal`, `mcp`)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from portal.adapters.sql.accounts import Accounts as SqlAccounts
from portal.adapters.sql.api_keys import ApiKeys
from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import head_revision
from portal.adapters.sql.store import SqlStore
from portal.domain.people import PERMISSIONS
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

from .runner import BIN, run, run_console_script


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    base.update(MEMORY_INSTANCE_PATH=str(tmp_path / "instance"), MEMORY_EMBEDDER="none")
    return base


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_upgrade_is_idempotent_and_tenant_create_prints_its_id(env: dict[str, str]) -> None:
    first = run(["db", "upgrade"], env)
    again = run(["db", "upgrade"], env)
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert f"revision {head_revision()}" in again.stdout
    created = run(["tenant", "create", "Acme", "--no-ai"], env)
    assert created.returncode == 0, created.stderr
    tenant_id = created.stdout.strip()
    assert len(tenant_id) == 32
    listed = run(["tenant", "list"], env)
    assert f"{tenant_id}\tAcme\tai=off" in listed.stdout
    duplicate = run(["tenant", "create", "Acme"], env)
    assert duplicate.returncode != 0 and "exists already" in duplicate.stderr


def test_api_key_is_printed_once_listed_without_its_secret_and_revocable(env: dict[str, str], tmp_path: Path) -> None:
    assert run(["db", "upgrade"], env).returncode == 0
    tenant_id = run(["tenant", "create", "Acme"], env).stdout.strip()
    assert run(["tenant", "create", "Globex"], env).returncode == 0

    created = run(
        ["api-key", "create", "--tenant", "Acme", "--permission", "memories:read",
         "--permission", "memories:write", "--name", "backend"],
        env,
    )
    assert created.returncode == 0, created.stderr
    # The key alone on stdout, so that `KEY=$(memory-portal api-key create ...)` captures just it.
    assert re.fullmatch(r"mp_[0-9a-f]{32}_[A-Za-z0-9_-]{43}\n", created.stdout), created.stdout
    token = created.stdout.strip()
    key_id, secret = token.split("_", 2)[1:]
    by_id = run(["api-key", "create", "--tenant", tenant_id, "--permission", "erasure"], env)
    assert by_id.returncode == 0, by_id.stderr
    other = run(["api-key", "create", "--tenant", "Globex", "--permission", "consolidate"], env)
    assert other.returncode == 0, other.stderr

    # The printed key is the one the API will accept, with the asked tenant and permissions.
    engine = make_engine(f"sqlite:///{tmp_path / 'instance' / 'memory.db'}")
    try:
        keys = ApiKeys(engine)
        found = keys.verify(token)
        assert found is not None and found.tenant_id == tenant_id
        assert found.permissions == {"memories:read", "memories:write"}

        listed = run(["api-key", "list"], env)
        assert listed.returncode == 0, listed.stderr
        assert len(listed.stdout.splitlines()) == 3
        assert secret not in listed.stdout and token not in listed.stdout
        assert secret not in by_id.stderr + other.stderr + created.stderr
        (line,) = [row for row in listed.stdout.splitlines() if row.startswith(key_id)]
        fields = line.split("\t")
        assert fields[:5] == [key_id, "Acme", "backend", token[:12], "memories:read,memories:write"]
        assert fields[5].startswith("created=") and fields[6] == "active"
        acme = run(["api-key", "list", "--tenant", "Acme"], env).stdout.splitlines()
        assert len(acme) == 2 and all("\tAcme\t" in row for row in acme)

        revoked = run(["api-key", "revoke", key_id], env)
        assert revoked.returncode == 0, revoked.stderr
        assert keys.verify(token) is None
        (line,) = [row for row in run(["api-key", "list"], env).stdout.splitlines() if row.startswith(key_id)]
        assert line.split("\t")[6].startswith("revoked=")
        again = run(["api-key", "revoke", key_id], env)
        assert again.returncode != 0 and "no active API key" in again.stderr
    finally:
        engine.dispose()

    unknown = run(["api-key", "create", "--tenant", "Acme", "--permission", "memories:delete"], env)
    assert unknown.returncode != 0 and unknown.stdout == "" and "memories:delete" in unknown.stderr
    nowhere = run(["api-key", "create", "--tenant", "Initech", "--permission", "memories:read"], env)
    assert nowhere.returncode != 0 and nowhere.stdout == "" and "Initech" in nowhere.stderr
    bare = run(["api-key", "create", "--tenant", "Acme"], env)
    assert bare.returncode != 0 and bare.stdout == "" and "--permission" in bare.stderr


def test_api_key_create_help_names_every_permission_the_code_knows(env: dict[str, str]) -> None:
    """Issue 38, item 13: `memories:forget` was missing from the help, which listed them by hand."""
    helped = run(["api-key", "create", "--help"], env)
    assert helped.returncode == 0, helped.stderr
    for permission in PERMISSIONS:
        assert permission in helped.stdout, helped.stdout


def test_the_ai_switch_is_said_one_way_when_a_tenant_is_made_and_after(env: dict[str, str]) -> None:
    """Issue 38, item 13: `--ai/--no-ai` at creation and afterwards (`tenant set`); `tenant ai NAME
    on|off`, the older spelling, still works and is not offered any more."""
    assert run(["db", "upgrade"], env).returncode == 0
    assert run(["tenant", "create", "Acme", "--no-ai"], env).returncode == 0

    def switch() -> str:
        (line,) = [row for row in run(["tenant", "list"], env).stdout.splitlines() if "\tAcme\t" in row]
        return line.split("\t")[2]

    assert switch() == "ai=off"
    on = run(["tenant", "set", "Acme", "--ai"], env)
    assert (on.returncode, on.stdout, switch()) == (0, "ai on\n", "ai=on"), on.stderr
    off = run(["tenant", "set", "Acme", "--no-ai"], env)
    assert (off.returncode, off.stdout, switch()) == (0, "ai off\n", "ai=off"), off.stderr
    nothing = run(["tenant", "set", "Acme"], env)
    assert nothing.returncode == 2 and "--ai or --no-ai" in nothing.stderr and switch() == "ai=off"
    older = run(["tenant", "ai", "Acme", "on"], env)
    assert (older.returncode, switch()) == (0, "ai=on"), older.stderr
    listed = run(["tenant", "--help"], env).stdout
    assert "set" in listed and not any(line.split()[:1] == ["ai"] for line in listed.splitlines())
    assert "--ai / --no-ai" in run(["tenant", "set", "--help"], env).stdout


@pytest.mark.usefixtures("cheap_password_hashes")
def test_demo_then_export_and_purge(env: dict[str, str]) -> None:
    demo = run(["demo"], env)
    assert demo.returncode == 0, demo.stderr
    assert "demo-ada has 9 memories" in demo.stdout
    assert "ada@demo.example" in demo.stdout  # how to sign in
    # Running it again keeps the same nine (reinforced, not duplicated).
    assert "demo-ada has 9 memories" in run(["demo"], env).stdout
    # Paused in the portal, the demo person learns nothing, and running the demo again still works.
    demo_id = next(line.split("\t")[0] for line in run(["tenant", "list"], env).stdout.splitlines() if "\tDemo\t" in line)
    paused_engine = make_engine(f"sqlite:///{env['MEMORY_INSTANCE_PATH']}/memory.db")
    MemoryService(SqlStore(paused_engine)).pause(Place("demo-ada", demo_id))
    paused_engine.dispose()
    again = run(["demo"], env)
    assert again.returncode == 0, again.stderr
    assert "demo-ada has 9 memories" in again.stdout
    exported = run(["export", "demo-ada", "--tenant", "Demo"], env)
    data = json.loads(exported.stdout)
    assert len(data["memories"]) == 9
    assert {m["text"] for m in data["memories"]} >= {"Has a cat called Miso"}
    # Owner ids are per tenant: with --tenant, another tenant's namesake keeps everything.
    assert run(["tenant", "create", "Other"], env).returncode == 0
    other = run(["tenant", "list"], env).stdout
    other_id = next(line.split("\t")[0] for line in other.splitlines() if "\tOther\t" in line)
    engine = make_engine(f"sqlite:///{env['MEMORY_INSTANCE_PATH']}/memory.db")
    assert MemoryService(SqlStore(engine)).remember(Place("demo-ada", other_id), "Collects stamps").ok
    engine.dispose()
    assert (data["format"], data["version"]) == ("memory-portal/export", 1)  # the document import reads
    saved = Path(env["MEMORY_INSTANCE_PATH"]) / "demo-ada.json"
    saved.write_text(exported.stdout, encoding="utf-8")
    purged = run(["purge-owner", "demo-ada", "--tenant", "Demo", "--yes"], env)
    assert json.loads(purged.stdout)["memories"] == 9
    after = json.loads(run(["export", "demo-ada", "--tenant", "Demo"], env).stdout)
    assert after["memories"] == []
    # export -> erase -> import: the same nine back; the same file twice adds nothing
    back = run(["import", str(saved), "--owner", "demo-ada", "--tenant", "Demo"], env)
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout) == {"format": "memory-portal/export", "added": 9, "duplicates": 0, "refused": {},
                                       "earlier_refused": {}, "dry_run": False}
    restored = json.loads(run(["export", "demo-ada", "--tenant", "Demo"], env).stdout)
    strip = lambda doc: sorted((m["text"], m["kind"], m["importance"], m["pinned"], m["created_at"])  # noqa: E731
                               for m in doc["memories"])
    assert strip(restored) == strip(data)
    assert json.loads(run(["import", str(saved), "--owner", "demo-ada", "--tenant", "Demo"], env).stdout)["added"] == 0
    lines = Path(env["MEMORY_INSTANCE_PATH"]) / "lines.txt"
    lines.write_text("- Has a cat called Miso\n- Keeps bees\n", encoding="utf-8")
    listed = json.loads(run(["import", str(lines), "--owner", "demo-ada", "--tenant", "Demo", "--dry-run"], env).stdout)
    assert (listed["format"], listed["added"], listed["duplicates"], listed["dry_run"]) == ("lines", 1, 1, True)
    assert "Keeps bees" not in run(["export", "demo-ada", "--tenant", "Demo"], env).stdout  # a preview keeps nothing
    junk = Path(env["MEMORY_INSTANCE_PATH"]) / "junk.json"
    junk.write_text('{"nothing": "here"}', encoding="utf-8")
    refused = run(["import", str(junk), "--owner", "demo-ada", "--tenant", "Demo"], env)
    assert refused.returncode == 1 and "cannot be read" in refused.stderr and "Traceback" not in refused.stderr
    assert run(["purge-owner", "demo-ada", "--tenant", "Demo", "--yes"], env).returncode == 0
    kept = json.loads(run(["export", "demo-ada", "--tenant", "Other"], env).stdout)
    assert [m["text"] for m in kept["memories"]] == ["Collects stamps"]
    everywhere = run(["purge-owner", "demo-ada", "--every-tenant", "--yes"], env)
    assert json.loads(everywhere.stdout)["memories"] == 1


def test_bad_configuration_stops_with_the_variable_named(env: dict[str, str]) -> None:
    bad = run(["db", "upgrade"], {**env, "MEMORY_EMBEDDER": "gpu"})
    assert bad.returncode != 0
    assert "MEMORY_EMBEDDER" in bad.stderr
    # A real process: were the check missing, `serve` would start a server (in this process, for good).
    prod = run_console_script(["serve"], {**env, "MEMORY_ENV": "production"})
    assert prod.returncode != 0 and "MEMORY_SECRET_KEY" in prod.stderr


def test_reindex_without_embedder_says_so(env: dict[str, str]) -> None:
    result = run(["reindex"], env)
    assert result.returncode != 0 and "no embedder" in result.stderr


def test_serve_answers_health_and_readiness_on_loopback(env: dict[str, str]) -> None:
    assert run(["db", "upgrade"], env).returncode == 0
    port = free_port()
    proc = subprocess.Popen(
        [str(BIN), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "2"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        ready = None
        while time.monotonic() < deadline:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert ready is not None and ready.status_code == 200, "server did not come up"
        assert ready.json()["database"] == "ok"
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json() == {"status": "ok"}
        home = httpx.get(f"http://127.0.0.1:{port}/", follow_redirects=True)
        assert home.status_code == 200 and "Sign in" in home.text  # the portal's front door
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=30)
    # gunicorn, not Flask's development server, with two workers.
    assert "Booting worker" in output and "Development server" not in output
    assert output.count("Booting worker") >= 2


def test_serve_refuses_a_port_in_use_in_one_line_before_the_app_loads(env: dict[str, str]) -> None:
    # Issue 38: with `make run` up, a second `serve` on its port never started, while a readiness
    # loop passed against the first one. It says so at once, naming the port, and exits non-zero.
    assert run(["db", "upgrade"], env).returncode == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = run_console_script(["serve", "--host", "127.0.0.1", "--port", str(port)], env)
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        f"Error: port {port} on 127.0.0.1 is in use already (another server?): stop it, or serve on another --port"]
    assert refused.stdout == ""  # nor gunicorn's own retries (5 s, a dozen lines), nor a worker booting


@pytest.mark.parametrize("through", ["console script", "flask"])
def test_commands_work_and_a_service_error_is_one_line_under_either_command(env: dict[str, str], through: str) -> None:
    assert run(["db", "upgrade"], env).returncode == 0
    command = [sys.executable, "-m", "flask", "--app", "portal"] if through == "flask" else [str(BIN)]
    made = subprocess.run([*command, "tenant", "create", f"By {through}"], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert made.returncode == 0, made.stderr
    assert f"\tBy {through}\t" in run(["tenant", "list"], env).stdout
    answer = subprocess.run([*command, "export", " "], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert answer.returncode == 1
    assert "Error: No person was given." in answer.stderr and "Traceback" not in answer.stderr


@pytest.mark.usefixtures("cheap_password_hashes")
def test_accounts_are_listed_disabled_and_removed_and_errors_are_sentences(env: dict[str, str]) -> None:
    assert run(["db", "upgrade"], env).returncode == 0
    assert run(["tenant", "create", "Acme"], env).returncode == 0
    base = ["user", "create", "--tenant", "Acme", "--password-stdin"]
    assert run([*base, "--email", "sam@acme.example", "--name", "Sam", "--role", "staff"], env,
               stdin="a long enough password\n").returncode == 0
    assert run([*base, "--email", "ada@acme.example", "--name", "Ada"], env, stdin="a long enough password\n").returncode == 0
    # refusals: a sentence and exit 1; with --json the code, on standard output
    short = run([*base, "--email", "bo@acme.example", "--name", "Bo"], env, stdin="short\n")
    assert short.returncode == 1 and "Error: The password needs at least 10 characters." in short.stderr
    assert "password_too_short" not in short.stderr
    taken = run([*base, "--email", "sam@acme.example", "--name", "Sam", "--json"], env, stdin="a long enough password\n")
    assert taken.returncode == 1
    assert json.loads(taken.stdout) == {"ok": False, "code": "email_taken",
                                        "message": "An account with that e-mail exists already."}

    listed = run(["user", "list"], env)
    assert listed.returncode == 0
    header, *lines = listed.stdout.strip().splitlines()
    assert header.split("\t") == ["e-mail", "name", "role", "tenant", "state", "last sign-in"]
    assert sorted(line.split("\t") for line in lines) == [  # the tenant by its name, not its id
        ["ada@acme.example", "Ada", "member", "Acme", "active", "never"],
        ["sam@acme.example", "Sam", "staff", "Acme", "active", "never"]]
    staff = json.loads(run(["user", "list", "--staff", "--json"], env).stdout)
    assert [a["email"] for a in staff["accounts"]] == ["sam@acme.example"]

    assert run(["user", "disable", "--email", "sam@acme.example"], env).returncode == 0
    assert "disabled" in run(["user", "list", "--staff"], env).stdout
    engine = make_engine(f"sqlite:///{env['MEMORY_INSTANCE_PATH']}/memory.db")
    try:
        accounts = SqlAccounts(engine)
        assert accounts.authenticate("sam@acme.example", "a long enough password") is None
    finally:
        engine.dispose()
    assert run(["user", "set-password", "--email", "sam@acme.example", "--password-stdin"], env,
               stdin="another long password\n").returncode == 0
    assert "active" in run(["user", "list", "--staff"], env).stdout  # enabled again

    person = run(["user", "remove", "--email", "ada@acme.example"], env)
    assert person.returncode == 1 and "through an erasure request" in person.stderr
    assert run(["user", "disable", "--email", "ada@acme.example"], env).returncode == 1  # as the console refuses
    unknown = run(["user", "list", "--tenant", "Nope", "--json"], env)
    assert unknown.returncode == 1 and json.loads(unknown.stdout)["code"] == "unknown_tenant"
    nobody = run(["user", "remove", "--email", "nobody@acme.example", "--json"], env)
    assert nobody.returncode == 1 and json.loads(nobody.stdout)["code"] == "no_account"
    assert run(["user", "remove", "--email", "sam@acme.example"], env).returncode == 0
    assert "sam@acme.example" not in run(["user", "list"], env).stdout


def test_import_names_the_person_as_export_does_and_still_takes_the_older_form(env: dict[str, str], tmp_path: Path) -> None:
    """Issue 27: `export OWNER`, `purge-owner OWNER` and `import OWNER FILE` name the person the same
    way; `import FILE --owner OWNER`, the form of before, still works."""
    assert run(["db", "upgrade"], env).returncode == 0 and run(["tenant", "create", "Acme"], env).returncode == 0
    lines = tmp_path / "notes.txt"
    lines.write_text("Keeps bees\nGrows basil\n", encoding="utf-8")
    done = run(["import", "ada", str(lines), "--tenant", "Acme"], env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 2
    lines.write_text("Plays the oboe\n", encoding="utf-8")
    older = run(["import", str(lines), "--owner", "ada", "--tenant", "Acme"], env)
    assert older.returncode == 0 and json.loads(older.stdout)["added"] == 1, older.stderr
    exported = json.loads(run(["export", "ada", "--tenant", "Acme"], env).stdout)
    assert sorted(m["text"] for m in exported["memories"]) == ["Grows basil", "Keeps bees", "Plays the oboe"]
    confused = run(["import", "ada", str(lines), "--owner", "bob", "--tenant", "Acme"], env)
    assert confused.returncode == 2 and "either OWNER_ID (before FILE) or --owner" in confused.stderr


def test_mcp_over_stdio_without_a_database_url_says_so_and_makes_no_database(env: dict[str, str], tmp_path: Path) -> None:
    """Issue 27: an assistant starts `memory-portal mcp` in a folder of its own; without
    MEMORY_DATABASE_URL it must not make an empty database there and then ask for `db upgrade`."""
    folder = tmp_path / "assistant"
    folder.mkdir()
    bare = {k: v for k, v in env.items() if k != "MEMORY_INSTANCE_PATH"}
    bare["MEMORY_API_KEY"] = "mp_anything"
    done = subprocess.run([str(BIN), "mcp", "--owner", "ada"], env=bare, cwd=folder, input="", capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert "MEMORY_DATABASE_URL" in done.stderr and "db upgrade" not in done.stderr, done.stderr
    assert list(folder.iterdir()) == []  # no instance folder, no empty database
