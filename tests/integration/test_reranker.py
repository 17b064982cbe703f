"""A rerank server as recall's second opinion (issue 31, portal.adapters.reranker), against a fake
server on 127.0.0.1, through the service on every store: off by default; when on it orders recall's
first candidates and its relevance is the hits' score; when it fails, stalls past its deadline or
answers nonsense, recall answers in its own order, in time, and logs no word."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from portal.adapters.reranker import HttpReranker
from portal.config import ConfigError, load_config
from portal.domain.options import Options
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

from ..fakes.embedders import HashEmbedder
from ..fakes.rerank_server import FakeRerankServer

PLACE = Place("ada", "rerank")
TEXTS = ["Drinks green tea every morning", "Keeps green plants on the balcony", "Paints green doors for a living"]


@pytest.fixture(params=["cohere", "tei"])
def server(request: pytest.FixtureRequest) -> Iterator[FakeRerankServer]:
    with FakeRerankServer(api=request.param) as fake:
        # The server's opinion: the memory about painting answers "green" best, then the plants.
        fake.score = lambda query, text: {"Paints": 0.9, "Keeps": 0.6}.get(text.split()[0], 0.1)
        yield fake


def service(store: Any, server: FakeRerankServer | None, timeout: float = 0.5, mask: str = "none") -> MemoryService:
    reranker = HttpReranker(server.base_url, model="rerank-x", api_key="sk-test", api=server.api,
                            timeout=timeout) if server else None
    made = MemoryService(store, HashEmbedder(), options=Options(reranker=reranker, rerank_candidates=10), mask=mask)
    for text in TEXTS:
        made.remember(PLACE, text)
    return made


def test_without_a_reranker_recall_keeps_its_own_order(store: Any) -> None:
    hits = service(store, None).recall(PLACE, "green tea", limit=3)
    assert hits[0].memory.text == "Drinks green tea every morning"
    assert load_config({"MEMORY_INSTANCE_PATH": "/tmp"}).rerank_url is None  # off by default


def test_the_reranker_orders_the_candidates_and_gives_the_score(store: Any, server: FakeRerankServer) -> None:
    hits = service(store, server).recall(PLACE, "green tea", limit=2)
    assert [h.memory.text for h in hits] == ["Paints green doors for a living", "Keeps green plants on the balcony"]
    assert [round(h.score, 6) for h in hits] == [0.9, 0.6]
    sent = server.requests[-1]
    assert sent["path"] == "/rerank" and sent["auth"] == "Bearer sk-test"
    assert sent["body"]["query"] == "green tea"
    assert sorted(sent["body"]["texts" if server.api == "tei" else "documents"]) == sorted(TEXTS)
    if server.api == "cohere":
        assert sent["body"]["model"] == "rerank-x" and sent["body"]["top_n"] == 3


@pytest.mark.parametrize("mode", ["error", "partial", "nan", "garbage", "slow", "down"])
def test_a_failing_or_slow_reranker_leaves_recall_its_own_order(store: Any, server: FakeRerankServer, mode: str,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    made = service(store, server, timeout=0.3)
    expected = [h.memory.id for h in MemoryService(store, HashEmbedder()).recall(PLACE, "green tea", limit=3)]
    server.mode = mode if mode != "down" else "ok"
    if mode == "down":
        made.ctx.options.reranker._client.base_url = "http://127.0.0.1:9"  # type: ignore[union-attr]  # nothing listens
    caplog.set_level(logging.WARNING, logger="portal.memory")
    started = time.monotonic()
    hits = made.recall(PLACE, "green tea", limit=3)
    assert time.monotonic() - started < 0.9  # the deadline held (0.3 s a wait), not the server's 1 s
    assert [h.memory.id for h in hits] == expected
    failed = [r.getMessage() for r in caplog.records if "reranker.failed" in r.getMessage()]
    assert len(failed) == 1 and "green" not in failed[0] and "tea" not in failed[0]


def test_the_reranker_is_sent_masked_text_when_the_deployment_masks(store: Any, server: FakeRerankServer) -> None:
    made = service(store, server, mask="pii")
    made.remember(PLACE, "Green tea from ada@example.org")
    made.recall(PLACE, "green tea", limit=3)
    sent = server.requests[-1]["body"]
    assert not any("ada@example.org" in t for t in sent["texts" if server.api == "tei" else "documents"])


def test_a_bad_rerank_setting_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="MEMORY_RERANK_URL"):
        load_config({"MEMORY_INSTANCE_PATH": "/tmp", "MEMORY_RERANK_URL": "ftp://x"})
    with pytest.raises(ConfigError, match="MEMORY_RERANK_API"):
        load_config({"MEMORY_INSTANCE_PATH": "/tmp", "MEMORY_RERANK_URL": "http://x", "MEMORY_RERANK_API": "soap"})


def test_only_the_first_candidates_are_sent_and_the_rest_follow_in_recall_s_order(store: Any,
                                                                                   server: FakeRerankServer) -> None:
    made = service(store, server)
    made.ctx.options = Options(reranker=made.ctx.options.reranker, rerank_candidates=2)
    plain = MemoryService(store, HashEmbedder()).recall(PLACE, "green tea", limit=3)
    hits = made.recall(PLACE, "green tea", limit=3)
    sent = server.requests[-1]["body"]["texts" if server.api == "tei" else "documents"]
    assert len(sent) == 2 and sorted(sent) == sorted(h.memory.text for h in plain[:2])
    assert hits[2].memory.id == plain[2].memory.id  # not sent: after them, as recall ranked it
