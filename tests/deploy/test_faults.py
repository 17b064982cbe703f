"""Faults, each shown through the JSON API on PostgreSQL: nothing is lost and the answer is clear.

- The embedder raising (HTTP 500) or hanging past its timeout: remember still stores (without a
  vector), recall falls back to words; once it is back, reindex fills the missing vectors.
- The LLM down (connection refused) or answering garbage: consolidate answers failed with reason
  model / unreadable, learns nothing, and releases the ref, so a retry works once the model does.
- The database dropping the app's connections between two requests: the next request works (the
  pool pre-pings); and dropping one in the middle of a request: a clear 503, nothing half-written,
  the next request works.
- A consolidation whose third write fails at our own Store boundary: the others are kept, status
  failed with reason store, the ref released; the retry adds the missing one and merges the rest.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.openai_embedder import OpenAIEmbedder
from portal.adapters.sql.engine import make_engine
from portal.domain.types import Place

from ..api.conftest import World, build_world
from ..fakes.llm_server import FakeLLMServer, Reply

pytestmark = pytest.mark.postgres

API = "/api/v1"
DIM = 16
TERMINATE_OTHERS = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)
TRANSCRIPT = [
    {"role": "user", "text": "I adopted a cat called Miso and I am training for a marathon."},
    {"role": "assistant", "text": "Lovely! When is the marathon?"},
    {"role": "user", "text": "In April, in Paris. I also started learning the violin."},
]
FACTS = ("Has a cat called Miso", "Is training for a marathon", "Runs the Paris marathon in April",
         "Started learning the violin", "Likes talking about training")


def facts(*texts: str) -> str:
    return json.dumps({"facts": [{"text": t, "kind": "fact", "importance": 4} for t in texts], "summary": "a chat"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------------------- fake embedder


class FakeEmbeddings:
    """`POST /v1/embeddings` on loopback: answers vectors ("ok"), HTTP 500 ("error"), or sleeps
    past any client's timeout ("hang")."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.calls = 0
        self.released = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                fake.calls += 1
                if fake.mode == "hang":
                    fake.released.wait(10)
                if fake.mode == "error":
                    payload, status = b'{"error": {"message": "boom"}}', 500
                else:
                    data = [{"index": i, "embedding": vector(t)} for i, t in enumerate(body.get("input", []))]
                    payload, status = json.dumps({"data": data, "model": body.get("model")}).encode(), 200
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the hanging case)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def vector(text_: str) -> list[float]:
    """A bag of words hashed into DIM numbers: texts sharing words are close."""
    out = [0.0] * DIM
    for word in text_.lower().split():
        out[sum(map(ord, word)) % DIM] += 1.0
    norm = sum(x * x for x in out) ** 0.5 or 1.0
    return [x / norm for x in out]


@pytest.fixture(scope="module")
def embeddings() -> Iterator[FakeEmbeddings]:
    fake = FakeEmbeddings()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.released.set()
        fake.server.shutdown()
        fake.server.server_close()


# ------------------------------------------------------------------------------------- worlds


@pytest.fixture
def make(pg_engine: Engine, tmp_path: Path) -> Iterator[Callable[..., World]]:
    """API worlds on a fresh PostgreSQL database; at the end none answered a 5xx other than 503."""
    worlds: list[World] = []

    def build(**kwargs: Any) -> World:
        folder = tmp_path / f"world{len(worlds)}"
        folder.mkdir()
        world = build_world(pg_engine, folder, **kwargs)
        worlds.append(world)
        return world

    yield build
    errors = [seen for w in worlds for seen in w.recorder.seen if seen[2] >= 500 and seen[2] != 503]
    assert not errors, f"server errors: {errors}"


def remember(world: World, owner: str, text_: str, **headers: str) -> dict[str, Any]:
    answer = world.raw().post(f"{API}/people/{owner}/memories", json={"text": text_}, headers=world.auth(**headers))
    assert answer.status_code == 201, answer.get_data(as_text=True)
    memory: dict[str, Any] = answer.get_json()["memory"]
    return memory


def recall(world: World, owner: str, query: str) -> list[dict[str, Any]]:
    answer = world.raw().post(f"{API}/people/{owner}/recall", json={"query": query, "limit": 10}, headers=world.auth())
    assert answer.status_code == 200, answer.get_data(as_text=True)
    items: list[dict[str, Any]] = answer.get_json()["items"]
    return items


def listed(world: World, owner: str) -> list[dict[str, Any]]:
    answer = world.raw().get(f"{API}/people/{owner}/memories?limit=200", headers=world.auth())
    assert answer.status_code == 200, answer.get_data(as_text=True)
    items: list[dict[str, Any]] = answer.get_json()["items"]
    return items


def consolidate(world: World, owner: str, ref: str) -> dict[str, Any]:
    answer = world.raw().post(f"{API}/people/{owner}/consolidate", json={"transcript": TRANSCRIPT, "ref": ref},
                              headers=world.auth())
    assert answer.status_code == 200, answer.get_data(as_text=True)
    body: dict[str, Any] = answer.get_json()
    return body


# ----------------------------------------------------------------------------------- embedder


@pytest.mark.parametrize("mode", ["error", "hang"])
def test_an_embedder_failing_or_hanging_loses_no_write_and_recall_falls_back_to_words(
    make: Callable[..., World], embeddings: FakeEmbeddings, mode: str
) -> None:
    embedder = OpenAIEmbedder(embeddings.base_url, "fake-embed", timeout=0.5, retries=1, backoff=0.01)
    world = make(embedder=embedder)
    embeddings.mode = "ok"
    before = remember(world, "ada", "Plays chess with her brother on Fridays")
    assert before["has_vector"] is True
    assert {h["match"] for h in recall(world, "ada", "chess brother")} <= {"vector", "hybrid"}

    embeddings.mode = mode
    calls = embeddings.calls
    started = time.monotonic()
    kept = remember(world, "ada", "Grows tomatoes on her balcony")
    # The timeout bounds the whole wait, retries included: an error is tried again, a hang uses
    # up the time in its one try. Either way the write went on without a vector.
    assert time.monotonic() - started < 0.5 + 1.5
    assert kept["has_vector"] is False and kept["text"] == "Grows tomatoes on her balcony"
    assert embeddings.calls == calls + (2 if mode == "error" else 1)
    hits = recall(world, "ada", "tomatoes balcony")
    assert hits and hits[0]["memory"]["id"] == kept["id"]
    assert {h["match"] for h in hits} == {"lexical"}
    # The memory with a vector is still found by its words while the embedder is down.
    assert [h["memory"]["id"] for h in recall(world, "ada", "chess")] == [before["id"]]
    assert {m["id"] for m in listed(world, "ada")} == {before["id"], kept["id"]}

    # Back up: new writes get a vector again, and reindex fills the one written during the outage.
    embeddings.mode = "ok"
    assert world.runtime.service.reindex() == 1
    again = world.raw().get(f"{API}/people/ada/memories/{kept['id']}", headers=world.auth()).get_json()
    assert (again["has_vector"], again["revision"], again["text"]) == (True, 1, kept["text"])
    assert any(h["match"] in ("vector", "hybrid") for h in recall(world, "ada", "tomatoes balcony"))
    embedder.close()


# ---------------------------------------------------------------------------------------- LLM


def test_the_llm_down_fails_clearly_and_the_ref_is_released_for_a_retry(make: Callable[..., World]) -> None:
    port = free_port()  # nothing listens there yet: connection refused
    llm = OpenAICompatibleLLM(f"http://127.0.0.1:{port}/v1", "m", retries=1, timeout=2.0)
    world = make(llm=llm)
    remember(world, "ada", "Likes green tea")
    result = consolidate(world, "ada", "conv-1")
    assert (result["status"], result["reason"], result["added"]) == ("failed", "model", 0)
    assert [m["text"] for m in listed(world, "ada")] == ["Likes green tea"]

    with FakeLLMServer(port=port) as model:
        model.script(facts("Has a cat called Miso"))
        retried = consolidate(world, "ada", "conv-1")
        assert (retried["status"], retried["added"]) == ("done", 1)
        assert consolidate(world, "ada", "conv-1")["status"] == "already"
        assert len(model.requests) == 1
    assert sorted(m["text"] for m in listed(world, "ada")) == ["Has a cat called Miso", "Likes green tea"]
    llm.close()


@pytest.mark.parametrize("garbage", [
    "I'm sorry, I can't help with that.",
    "<html><body><h1>502 Bad Gateway</h1></body></html>",  # a proxy's page with status 200
    "null",
    "",
])
def test_a_garbage_answer_fails_as_unreadable_and_the_ref_is_released(make: Callable[..., World], garbage: str) -> None:
    with FakeLLMServer() as model:
        llm = OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=2.0)
        world = make(llm=llm)
        model.script(garbage, facts("Has a cat called Miso"))
        result = consolidate(world, "ada", "conv-1")
        assert (result["status"], result["reason"], result["added"]) == ("failed", "unreadable", 0)
        assert listed(world, "ada") == []
        retried = consolidate(world, "ada", "conv-1")
        assert (retried["status"], retried["added"]) == ("done", 1)
        llm.close()


def test_a_model_error_status_or_timeout_fails_as_model(make: Callable[..., World]) -> None:
    with FakeLLMServer() as model:
        llm = OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=0.5)
        world = make(llm=llm)
        model.script(Reply(status=503), Reply("", delay=1.5), facts("Has a cat called Miso"))
        assert consolidate(world, "ada", "conv-1")["reason"] == "model"
        assert consolidate(world, "ada", "conv-1")["reason"] == "model"
        assert consolidate(world, "ada", "conv-1")["status"] == "done"
        llm.close()


# ----------------------------------------------------------------------------------- database


def test_connections_dropped_between_two_requests_the_next_one_works(make: Callable[..., World], pg_engine: Engine) -> None:
    world = make()
    first = remember(world, "ada", "Speaks Portuguese")
    assert len(listed(world, "ada")) == 1  # the app's pool now holds live connections
    killer = make_engine(pg_engine.url)
    try:
        with killer.connect() as conn:
            killed = conn.execute(text(TERMINATE_OTHERS)).scalars().all()
        assert killed and all(killed), "the app held no connection to drop"
    finally:
        killer.dispose()
    # The pool pre-pings each connection it hands out: the dead ones are replaced, nobody sees it.
    assert [m["id"] for m in listed(world, "ada")] == [first["id"]]
    second = remember(world, "ada", "Speaks Italian too")
    assert {m["id"] for m in listed(world, "ada")} == {first["id"], second["id"]}
    assert [h["memory"]["id"] for h in recall(world, "ada", "Italian")] == [second["id"]]


def test_a_connection_dropped_in_the_middle_of_a_write_answers_503_and_writes_nothing(
    make: Callable[..., World], pg_engine: Engine
) -> None:
    world = make()
    remember(world, "ada", "Speaks Portuguese")
    place = Place("ada", world.tenant_a)
    answers: list[Any] = []
    holder = make_engine(pg_engine.url)
    try:
        with holder.connect() as blocker:
            # Hold the person's write lock (as another process's write would), so the request's
            # transaction waits inside the database, and cut its connection there.
            blocker.execute(text("SELECT pg_advisory_lock(hashtextextended(:key, 0))"),
                            {"key": f"memory-place:{place.owner_id}\x1f{place.scope}"})

            def write() -> None:
                answers.append(world.raw().post(f"{API}/people/ada/memories", json={"text": "Speaks Greek"},
                                                headers=world.auth(**{"Idempotency-Key": "greek-1"})))

            writer = threading.Thread(target=write)
            writer.start()
            waiting = wait_for(blocker, "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                        "AND datname = current_database()")
            blocker.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": waiting})
            writer.join(15)
            blocker.execute(text("SELECT pg_advisory_unlock_all()"))
            blocker.commit()
    finally:
        holder.dispose()
    (answer,) = answers
    assert answer.status_code == 503, answer.get_data(as_text=True)
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert answer.get_json()["code"] == "database_unavailable" and answer.headers["Retry-After"]
    assert [m["text"] for m in listed(world, "ada")] == ["Speaks Portuguese"]  # nothing half-written
    # The retry with the same key is applied now (the failed attempt left no receipt behind).
    retried = world.raw().post(f"{API}/people/ada/memories", json={"text": "Speaks Greek"},
                               headers=world.auth(**{"Idempotency-Key": "greek-1"}))
    assert retried.status_code == 201 and "Idempotent-Replayed" not in retried.headers
    assert sorted(m["text"] for m in listed(world, "ada")) == ["Speaks Greek", "Speaks Portuguese"]


def wait_for(conn: Any, query: str, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = conn.execute(text(query)).scalars().first()
        conn.commit()
        if found is not None:
            return int(found)
        time.sleep(0.02)
    raise AssertionError("the request never waited for the lock")


# ------------------------------------------------------------------------------ store boundary


class ThirdInsertFails:
    """The app's SqlStore with one fault at our own boundary: the third memory inserted raises
    what a database losing the connection raises."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.inserts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @contextmanager
    def write(self, place: Place) -> Iterator[Any]:
        with self.inner.write(place) as tx:
            original = tx.insert

            def insert(memory: Any) -> Any:
                self.inserts += 1
                if self.inserts == 3:
                    raise OperationalError("INSERT INTO memories", {}, Exception("server closed the connection"))
                return original(memory)

            tx.insert = insert
            yield tx


def test_a_consolidation_whose_third_write_fails_keeps_the_others_and_releases_the_ref(
    make: Callable[..., World],
) -> None:
    with FakeLLMServer() as model:
        llm = OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=2.0)
        world = make(llm=llm)
        flaky = ThirdInsertFails(world.runtime.store)
        world.runtime.service.store = flaky  # type: ignore[assignment]
        model.script(facts(*FACTS), facts(*FACTS))
        result = consolidate(world, "ada", "conv-1")
        assert (result["status"], result["reason"]) == ("failed", "store")
        assert (result["added"], result["failed"], result["proposed"]) == (4, 1, 5)
        kept = listed(world, "ada")
        assert sorted(m["text"] for m in kept) == sorted(FACTS[:2] + FACTS[3:])
        assert all(m["channel"] == "background" and m["seen"] is False for m in kept)

        # The ref was released: the retry learns the missing fact; the four kept are said again
        # (reinforced: no new revision of the same words).
        retried = consolidate(world, "ada", "conv-1")
        assert (retried["status"], retried["added"], retried["corrected"], retried["reinforced"]) == ("done", 1, 0, 4)
        after = listed(world, "ada")
        assert sorted(m["text"] for m in after) == sorted(FACTS)
        assert {m["id"] for m in kept} <= {m["id"] for m in after}  # same ids: merged, not duplicated
        assert consolidate(world, "ada", "conv-1")["status"] == "already"
        assert len(model.requests) == 2
        llm.close()
