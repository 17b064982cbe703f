"""Review of the rerank server as recall's second opinion (portal.adapters.reranker, 4f0b1aa), as
an attacker's server would meet it: each test here failed when written.

- A server that answers slowly but steadily (a byte at a time, each before the read timeout) holds
  the recall as long as it likes: httpx's timeout bounds each wait, not the whole answer, and the
  adapter has no deadline of its own (the OpenAI embedder checks one between chunks).
- A server that answers a huge body has it read whole into memory: no cap on the answer's size.
- The server is asked while recall still holds its database connection (the `with
  store.read(...)` block): a slow reranker keeps a pooled connection per recall for its time.
"""

from __future__ import annotations

import socket
import threading
import time
import tracemalloc
from typing import Any

import pytest

from portal.adapters.memory.store import InMemoryStore
from portal.adapters.reranker import HttpReranker
from portal.domain.options import Options
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

from ..fakes.embedders import HashEmbedder
from ..fakes.rerank_server import FakeRerankServer

PLACE = Place("ada", "rerank-review")
TEXTS = ["Drinks green tea every morning", "Keeps green plants on the balcony", "Paints green doors for a living"]


class RawServer:
    """A one-shot HTTP/1.1 answerer on 127.0.0.1: reads the request, sends a 200 with
    `Content-Length: len(body)`, then the body in `chunk`-byte pieces, `pause` seconds apart."""

    def __init__(self, body: bytes, chunk: int, pause: float) -> None:
        self.body, self.chunk, self.pause = body, chunk, pause
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                got = conn.recv(65536)
                if not got:
                    return
                data += got
            head, rest = data.split(b"\r\n\r\n", 1)
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(rest) < length:
                got = conn.recv(65536)
                if not got:
                    return
                rest += got
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             + f"Content-Length: {len(self.body)}\r\n\r\n".encode())
                view = memoryview(self.body)
                for start in range(0, len(view), self.chunk):
                    if self._stop.is_set():
                        return
                    conn.sendall(view[start:start + self.chunk])
                    if self.pause:
                        time.sleep(self.pause)
            except OSError:  # the client gave up
                return

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sock.close()


def made(store: Any, base_url: str, timeout: float = 0.3) -> MemoryService:
    reranker = HttpReranker(base_url, api="cohere", timeout=timeout)
    service = MemoryService(store, HashEmbedder(), options=Options(reranker=reranker, rerank_candidates=10))
    for text in TEXTS:
        service.remember(PLACE, text)
    return service


@pytest.fixture
def memory_store() -> InMemoryStore:
    return InMemoryStore()


def test_a_server_dripping_its_answer_is_given_up_at_the_deadline(store: Any) -> None:
    # 32 bytes, one every 0.1 s: each wait is well within the 0.3 s timeout, the whole 3.2 s.
    with RawServer(b" " * 30 + b"{}", chunk=1, pause=0.1) as server:
        service = made(store, server.base_url, timeout=0.3)
        expected = [h.memory.id for h in MemoryService(store, HashEmbedder()).recall(PLACE, "green tea", limit=3)]
        started = time.monotonic()
        hits = service.recall(PLACE, "green tea", limit=3)
        took = time.monotonic() - started
        service.ctx.options.reranker.close()  # type: ignore[union-attr]
    assert [h.memory.id for h in hits] == expected
    assert took < 1.0, f"recall waited {took:.1f} s on a server past its 0.3 s deadline"


def test_a_huge_answer_is_not_read_whole_into_memory(memory_store: InMemoryStore) -> None:
    # 24 MiB of JSON whitespace, sent as fast as loopback goes: no rerank answer is near that size.
    with RawServer(b" " * (24 * 1024 * 1024) + b"{}", chunk=1024 * 1024, pause=0.0) as server:
        service = made(memory_store, server.base_url, timeout=2.0)
        tracemalloc.start()
        try:
            hits = service.recall(PLACE, "green tea", limit=3)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            service.ctx.options.reranker.close()  # type: ignore[union-attr]
    assert len(hits) == 3
    assert peak < 8 * 1024 * 1024, f"recall held {peak / 2**20:.0f} MiB of the rerank server's answer"


def test_the_reranker_is_not_asked_while_recall_holds_a_database_connection(store: Any) -> None:
    engine = getattr(store, "engine", None)
    if engine is None:
        pytest.skip("the in-memory store has no connections")
    held: list[int] = []
    with FakeRerankServer(api="cohere") as fake:
        fake.score = lambda query, text: held.append(engine.pool.checkedout()) or 0.5  # type: ignore[func-returns-value]
        service = made(store, fake.base_url)
        service.recall(PLACE, "green tea", limit=3)
        service.ctx.options.reranker.close()  # type: ignore[union-attr]
    assert held, "the reranker was not asked"
    assert max(held) == 0, f"{max(held)} database connection(s) checked out while waiting on the rerank server"
