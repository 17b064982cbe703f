"""The `memory-portal` command line, run as a person would run it: a real process, a real database."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

BIN = Path(sys.executable).parent / "memory-portal"


def run(args: list[str], env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=env, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


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
    assert "revision 0001" in again.stdout
    created = run(["tenant", "create", "Acme", "--no-ai"], env)
    assert created.returncode == 0, created.stderr
    tenant_id = created.stdout.strip()
    assert len(tenant_id) == 32
    listed = run(["tenant", "list"], env)
    assert f"{tenant_id}\tAcme\tai=off" in listed.stdout
    duplicate = run(["tenant", "create", "Acme"], env)
    assert duplicate.returncode != 0 and "exists already" in duplicate.stderr


def test_demo_then_export_and_purge(env: dict[str, str]) -> None:
    demo = run(["demo"], env)
    assert demo.returncode == 0, demo.stderr
    assert "demo-ada has 8 memories" in demo.stdout
    # Running it again keeps the same eight (reinforced, not duplicated).
    assert "demo-ada has 8 memories" in run(["demo"], env).stdout
    exported = run(["export", "demo-ada", "--tenant", "Demo"], env)
    data = json.loads(exported.stdout)
    assert len(data["memories"]) == 8
    assert {m["text"] for m in data["memories"]} >= {"Has a cat called Miso"}
    purged = run(["purge-owner", "demo-ada", "--yes"], env)
    assert json.loads(purged.stdout)["memories"] == 8
    after = json.loads(run(["export", "demo-ada", "--tenant", "Demo"], env).stdout)
    assert after["memories"] == []


def test_bad_configuration_stops_with_the_variable_named(env: dict[str, str]) -> None:
    bad = run(["db", "upgrade"], {**env, "MEMORY_EMBEDDER": "gpu"})
    assert bad.returncode != 0
    assert "MEMORY_EMBEDDER" in bad.stderr
    prod = run(["serve"], {**env, "MEMORY_ENV": "production"})
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
        home = httpx.get(f"http://127.0.0.1:{port}/")
        assert home.status_code == 200 and "Memory portal" in home.text
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=30)
    # gunicorn, not Flask's development server, with two workers.
    assert "Booting worker" in output and "Development server" not in output
    assert output.count("Booting worker") >= 2
