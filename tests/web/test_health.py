"""Readiness tells a load balancer the truth about the database."""

from __future__ import annotations

from pathlib import Path

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import upgrade
from portal.app import create_app
from portal.bootstrap import build_runtime
from portal.config import load_config


def app_on(tmp_path: Path, migrate: bool):  # type: ignore[no-untyped-def]
    config = load_config(
        {"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none", "MEMORY_SECRET_KEY": "k" * 40}
    )
    engine = make_engine(config.database_url)
    if migrate:
        upgrade(engine)
    return create_app(runtime=build_runtime(config, embedder=None, engine=engine))


def test_ready_when_migrated(tmp_path: Path) -> None:
    client = app_on(tmp_path, migrate=True).test_client()
    assert client.get("/healthz").json == {"status": "ok"}
    answer = client.get("/readyz")
    assert answer.status_code == 200 and answer.json["database"] == "ok"


def test_not_ready_before_migrations(tmp_path: Path) -> None:
    client = app_on(tmp_path, migrate=False).test_client()
    answer = client.get("/readyz")
    assert answer.status_code == 503 and answer.json["database"] == "not_migrated"
    # Alive all the same: a restart would not help.
    assert client.get("/healthz").status_code == 200
