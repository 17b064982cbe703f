"""Several processes on one PostgreSQL stay correct (DESIGN §1, issue 8).

`memory-portal serve --workers 4` runs as a real subprocess (gunicorn, four forked workers) on a
free loopback port, against a fresh database on the session's PostgreSQL, set up through the
command line as an operator would. A thread pool of httpx clients then hammers one person:
concurrent writes of one text, many distinct writes, concurrent compare-and-set edits and retries
of one idempotent write. Last, a SIGTERM to the gunicorn master in the middle of a stream of
requests: whatever got an answer got a whole one, and the server exits cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.store import SqlStore
from portal.domain.types import Place
from portal.ports import Filters
from portal.serve import threads_per_worker

pytestmark = pytest.mark.postgres

BIN = Path(sys.executable).parent / "memory-portal"
API = "/api/v1"
POOL = 48  # httpx clients, one per thread
GRACEFUL_TIMEOUT = 30  # portal.serve.run's graceful_timeout


@dataclass
class Server:
    proc: subprocess.Popen[str]
    base: str
    key: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run([str(BIN), *args], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"memory-portal {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


@pytest.fixture(scope="module")
def database(postgres_url: str) -> Iterator[str]:
    """A fresh database on the session's PostgreSQL for this module, dropped afterwards."""
    name = f"deploy_{uuid.uuid4().hex[:12]}"
    admin = make_engine(postgres_url)
    try:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture(scope="module")
def env(database: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of an operator's shell: migrated database, a tenant and an API key made by the CLI."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    base.update(
        MEMORY_DATABASE_URL=database,
        MEMORY_EMBEDDER="none",
        MEMORY_INSTANCE_PATH=str(tmp_path_factory.mktemp("instance")),
        MEMORY_SECRET_KEY="s" * 40,
        # The default 1200/minute per key and process is not what these tests are about.
        MEMORY_API_RATE_LIMIT="100000/minute",
    )
    assert "database at revision" in cli(["db", "upgrade"], base)
    base["TEST_TENANT_ID"] = cli(["tenant", "create", "Acme"], base)
    base["TEST_API_KEY"] = cli(
        ["api-key", "create", "--tenant", "Acme", "--permission", "memories:read", "--permission", "memories:write"],
        base,
    )
    return base


def start(env: dict[str, str], workers: int, log: Path) -> Server:
    port = free_port()
    handle = log.open("w", encoding="utf-8")
    proc = subprocess.Popen(
        [str(BIN), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
        env=env, stdout=handle, stderr=subprocess.STDOUT, text=True,
    )
    handle.close()
    base = f"http://127.0.0.1:{port}"
    server = Server(proc, base, env["TEST_API_KEY"], log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"server exited early:\n{server.output()}"
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    else:
        stop(server)
        pytest.fail(f"server did not come up:\n{server.output()}")
    # Every worker booted before the load starts (each one takes requests from the shared socket).
    while server.output().count("Booting worker") < workers and time.monotonic() < deadline:
        time.sleep(0.1)
    return server


def stop(server: Server) -> None:
    if server.proc.poll() is None:
        server.proc.terminate()
        try:
            server.proc.wait(timeout=GRACEFUL_TIMEOUT + 10)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()


@pytest.fixture(scope="module")
def server(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start(env, 4, tmp_path_factory.mktemp("serve") / "gunicorn.log")
    try:
        yield running
    finally:
        stop(running)
    assert "Traceback" not in running.output(), running.output()


class Clients:
    """A pool of threads, each with its own httpx client to the server."""

    def __init__(self, server: Server, size: int = POOL) -> None:
        self.server = server
        self.size = size
        self._local = threading.local()
        self._made: list[httpx.Client] = []
        self._lock = threading.Lock()
        self.pool = ThreadPoolExecutor(size)

    def client(self) -> httpx.Client:
        made: httpx.Client | None = getattr(self._local, "client", None)
        if made is None:
            made = httpx.Client(base_url=self.server.base + API, timeout=60,
                                headers={"Authorization": f"Bearer {self.server.key}"})
            self._local.client = made
            with self._lock:
                self._made.append(made)
        return made

    def all_at_once(self, count: int, send: Callable[[httpx.Client, int], httpx.Response]) -> list[httpx.Response]:
        """`count` requests, released together when count fits in the pool (a barrier), else as fast as the pool goes."""
        barrier = threading.Barrier(count) if count <= self.size else None

        def one(i: int) -> httpx.Response:
            client = self.client()
            if barrier is not None:
                barrier.wait(timeout=30)
            return send(client, i)

        return list(self.pool.map(one, range(count)))

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        for made in self._made:
            made.close()


@pytest.fixture
def clients(server: Server) -> Iterator[Clients]:
    made = Clients(server)
    try:
        yield made
    finally:
        made.close()


def person() -> str:
    return f"p-{uuid.uuid4().hex[:10]}"


def listed(client: httpx.Client, owner: str, limit: int = 37) -> list[dict[str, Any]]:
    """Every page of the person's list, following next_cursor."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(1000):
        params: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        page = client.get(f"/people/{owner}/memories", params=params)
        assert page.status_code == 200, page.text
        items.extend(page.json()["items"])
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return items
    raise AssertionError("the list never ended")


def test_four_workers_serve_the_load(server: Server) -> None:
    pids = {line.rsplit("pid: ", 1)[1].rstrip(")\n") for line in server.output().splitlines() if "Booting worker" in line}
    assert len(pids) == 4, server.output()


def test_each_worker_gets_its_share_of_the_cpus_for_the_model() -> None:
    # torch's default, one thread per CPU in every worker, made a query 30-60 times slower under load.
    assert [threads_per_worker(w, cpus=2) for w in (1, 2, 4)] == [2, 1, 1]
    assert [threads_per_worker(w, cpus=16) for w in (1, 2, 4, 0)] == [16, 8, 4, 16]


def test_64_concurrent_writes_of_one_text_leave_one_memory(clients: Clients) -> None:
    owner = person()
    answers = clients.all_at_once(
        64, lambda c, _: c.post(f"/people/{owner}/memories", json={"text": "Plays the cello on Sundays"})
    )
    assert [a.status_code for a in answers] == [201] * 64, [a.text for a in answers if a.status_code != 201]
    ids = {a.json()["memory"]["id"] for a in answers}
    assert len(ids) == 1
    # Writes were serialised by the place's lock: one created it, and each of the 63 others met it
    # and, saying the very same words, reinforced it (none lost, no revision of identical text).
    assert [a.json()["memory"]["revision"] for a in answers] == [1] * 64
    assert sum(not a.json()["reinforced"] for a in answers) == 1
    assert all(a.json()["replaced_id"] is None for a in answers)
    (memory,) = listed(clients.client(), owner)
    assert (memory["id"], memory["revision"]) == (ids.pop(), 1)


def test_400_concurrent_distinct_writes_are_all_kept_and_paginate_completely(clients: Clients) -> None:
    owner = person()
    answers = clients.all_at_once(
        400, lambda c, i: c.post(f"/people/{owner}/memories", json={"text": f"Distinct fact number {i} about gardening"})
    )
    assert [a.status_code for a in answers] == [201] * 400, [a.text for a in answers if a.status_code != 201]
    written = [a.json()["memory"]["id"] for a in answers]
    assert len(set(written)) == 400 and all(a.json()["replaced_id"] is None for a in answers)
    items = listed(clients.client(), owner)
    ids = [m["id"] for m in items]
    assert len(ids) == 400 and set(ids) == set(written)  # every id exactly once
    stamps = [(m["created_at"], m["id"]) for m in items]
    assert stamps == sorted(stamps, reverse=True)  # newest first, across every page


def test_12_concurrent_edits_of_one_revision_let_exactly_one_win(clients: Clients) -> None:
    owner = person()
    made = clients.client().post(f"/people/{owner}/memories", json={"text": "Lives in Lyon"})
    assert made.status_code == 201
    memory_id = made.json()["memory"]["id"]
    etag = clients.client().get(f"/people/{owner}/memories/{memory_id}").headers["ETag"]
    assert etag == '"1"'
    answers = clients.all_at_once(
        12, lambda c, i: c.patch(f"/people/{owner}/memories/{memory_id}", json={"text": f"Lives in city {i}"},
                                 headers={"If-Match": etag})
    )
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] + [409] * 11, [a.text for a in answers]
    (winner,) = [a for a in answers if a.status_code == 200]
    assert winner.json()["revision"] == 2 and winner.headers["ETag"] == '"2"'
    for lost in (a for a in answers if a.status_code == 409):
        assert lost.headers["Content-Type"] == "application/problem+json"
        assert (lost.json()["code"], lost.json()["actual_revision"]) == ("conflict", 2)
    now = clients.client().get(f"/people/{owner}/memories/{memory_id}").json()
    assert (now["revision"], now["text"]) == (2, winner.json()["text"])
    history = clients.client().get(f"/people/{owner}/memories/{memory_id}/history").json()["items"]
    assert [r["revision"] for r in history] == [2, 1]


def test_16_concurrent_retries_with_one_idempotency_key_apply_once(clients: Clients) -> None:
    owner = person()
    key = f"retry-{uuid.uuid4().hex}"
    answers = clients.all_at_once(
        16, lambda c, _: c.post(f"/people/{owner}/memories", json={"text": "Has a dog called Biscuit", "importance": 4},
                                headers={"Idempotency-Key": key})
    )
    assert [a.status_code for a in answers] == [201] * 16, [a.text for a in answers]
    assert len({a.content for a in answers}) == 1  # every answer the same, byte for byte
    replayed = [a.headers.get("Idempotent-Replayed") for a in answers]
    assert replayed.count("true") == 15 and replayed.count(None) == 1
    (memory,) = listed(clients.client(), owner)
    assert (memory["id"], memory["revision"]) == (answers[0].json()["memory"]["id"], 1)


# ------------------------------------------------------------------------------------ SIGTERM


@dataclass
class Outcome:
    sent_at: float
    ended_at: float
    status: int | None = None
    body_ok: bool = False
    error: str | None = None
    memory_id: str | None = None


def test_sigterm_during_load_finishes_what_it_answers_and_exits_cleanly(
    env: dict[str, str], tmp_path: Path
) -> None:
    server = start(env, 4, tmp_path / "gunicorn.log")
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    stop_sending = threading.Event()
    owner = person()

    def stream(worker: int) -> None:
        with httpx.Client(base_url=server.base + API, timeout=GRACEFUL_TIMEOUT + 10,
                          headers={"Authorization": f"Bearer {server.key}"}) as client:
            n = 0
            while not stop_sending.is_set():
                n += 1
                sent = time.monotonic()
                outcome = Outcome(sent, sent)
                try:
                    if n % 3:
                        answer = client.post(f"/people/{owner}/memories",
                                             json={"text": f"Stream fact {worker} {n} about sailing"})
                    else:
                        answer = client.post(f"/people/{owner}/recall", json={"query": "sailing", "limit": 20})
                    outcome.status = answer.status_code
                    length = answer.headers.get("Content-Length")
                    complete = length is not None and int(length) == len(answer.content)
                    body = json.loads(answer.content)
                    outcome.body_ok = complete and isinstance(body, dict)
                    if answer.status_code == 201:
                        outcome.memory_id = body["memory"]["id"]
                except (httpx.TransportError, ValueError) as exc:
                    # Refused or reset before an answer: nothing was answered, so nothing half-answered.
                    outcome.error = type(exc).__name__
                outcome.ended_at = time.monotonic()
                with lock:
                    outcomes.append(outcome)
                if outcome.error is not None:
                    time.sleep(0.02)

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(16)]
    try:
        for t in threads:
            t.start()
        time.sleep(1.5)
        term_at = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=GRACEFUL_TIMEOUT + 5)
        stopped_at = time.monotonic()
        time.sleep(0.3)  # a last round of requests meets a closed port
    finally:
        stop_sending.set()
        for t in threads:
            t.join(GRACEFUL_TIMEOUT + 15)
        stop(server)

    output = server.output()
    assert code == 0, output
    assert stopped_at - term_at < GRACEFUL_TIMEOUT, output
    answered = [o for o in outcomes if o.status is not None]
    before = [o for o in answered if o.ended_at < term_at]
    assert len(before) >= 20, f"too little load before SIGTERM: {len(before)} answers"
    assert all(o.body_ok for o in answered), [o for o in answered if not o.body_ok][:5]
    assert {o.status for o in answered} <= {200, 201}, sorted({o.status for o in answered if o.status})
    # Requests in flight when the signal came were finished, not dropped.
    assert any(o.sent_at < term_at < o.ended_at for o in answered), "no request was in flight at SIGTERM"
    # After the exit, every request is refused at the door: none is half-answered.
    assert any(o.error is not None and o.sent_at > stopped_at for o in outcomes)
    assert "Traceback" not in output, output
    assert "Handling signal: term" in output and "Shutting down" in output, output
    # What was answered 201 is in the database, the last in-flight writes included.
    engine = make_engine(env["MEMORY_DATABASE_URL"])
    try:
        with SqlStore(engine).read(Place(owner, env["TEST_TENANT_ID"])) as tx:
            stored = {m.id for m in tx.list(Filters())}
    finally:
        engine.dispose()
    written = {o.memory_id for o in answered if o.memory_id}
    assert written and written <= stored
