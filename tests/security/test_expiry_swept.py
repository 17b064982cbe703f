"""An expired memory is erased, with no word left on disk, by each of the three that sweep (issue 29,
item 3) besides the worker process the erasure world runs (erasure_expiry.py): `serve`'s own
thread on the embedded default (a real `memory-portal serve`, started once the time has come: its
periodic sweep runs as its consumer starts), and `memory-portal prune` (SQLite and PostgreSQL).

The memories are written through the service of the instance's own runtime (as the CLI builds
it): one remembered with an expiry, one corrected with one (its earlier wording a revision), one
handed to an app's conversation whose reference holds a word; between its time and the sweep no
read answers them (tests/integration/test_decisions.py proves every read on every store)."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from portal.bootstrap import Runtime, build_runtime
from portal.config import load_config
from portal.domain.apps import App
from portal.domain.options import utc_now
from portal.domain.types import Place

from .live_server import cli_ok, instance_env, serve
from .scans import words_in_files, words_in_postgres_files, words_in_tables

PLACE = Place("owner-ex29", "tenant-ex29")
SOON = 2.0


def seed(env: dict[str, str], words: list[str]) -> Runtime:
    """Three memories expiring in SOON seconds, each with words; answers the instance's runtime."""
    runtime = build_runtime(load_config(env))
    service, at = runtime.service, utc_now() + timedelta(seconds=SOON)
    service.remember(PLACE, f"Rows a {words[0]} canoe", expires_at=at)
    first = service.remember(PLACE, f"Feeds the {words[1]} cat").memory
    service.update(PLACE, first.id, text=f"Feeds the {words[2]} cat", expires_at=at)
    app = service.for_app(App("app-ex29", "Assistant"), conversation_ref=f"About {words[3]} things")
    assert app.recall(PLACE, words[0])
    assert service.count(PLACE) == 2 and len(service.history(PLACE, first.id)) == 2
    time.sleep(max(0.0, (at - utc_now()).total_seconds()) + 0.1)
    assert service.count(PLACE) == 0 and service.list(PLACE, state="all").items == []
    assert left(runtime.engine) == 2  # expired, not yet swept
    return runtime


def left(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM memories WHERE owner_id = :o"),
                                {"o": PLACE.owner_id}).scalar_one())


def test_serve_s_own_sweep_erases_an_expired_memory_leaving_no_word(tmp_path: Path) -> None:
    words = ["qmexserv1", "qmexserv2", "qmexserv3", "qmexserv4"]
    env = instance_env(tmp_path)
    cli_ok(["db", "upgrade"], env)
    engine = seed(env, words).engine
    server = serve(env, tmp_path / "serve.log", workers=1)
    try:
        deadline = time.monotonic() + 60
        while left(engine) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        server.stop()
    assert left(engine) == 0, server.output()[-2000:]
    assert words_in_tables(engine, words) == []
    engine.dispose()
    assert words_in_files(tmp_path / "memory.db", words, "after serve's sweep") == []
    assert not [w for w in words if w in server.output()]


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_prune_erases_an_expired_memory_leaving_no_word(request: pytest.FixtureRequest, tmp_path: Path,
                                                         store: str) -> None:
    words = [f"qmexprun{n}{store[0]}" for n in range(1, 5)]
    started = time.time()
    if store == "sqlite":
        env = instance_env(tmp_path)
        cli_ok(["db", "upgrade"], env)
    else:
        pg: Engine = request.getfixturevalue("pg_engine")  # migrated
        env = instance_env(tmp_path, MEMORY_DATABASE_URL=pg.url.render_as_string(hide_password=False))
    runtime = seed(env, words)
    engine, cipher = runtime.engine, runtime.store.cipher
    said = cli_ok(["prune"], env)
    assert '"memories": 2' in said, said
    assert left(engine) == 0
    assert words_in_tables(engine, words, decrypt=cipher.decrypt if cipher is not None else None) == []
    if store == "sqlite":
        engine.dispose()
        assert words_in_files(tmp_path / "memory.db", words, "after prune") == []
    else:
        assert words_in_postgres_files(engine, words, "after a CHECKPOINT", since=started) == []
        engine.dispose()
