"""Probes, metrics, the OpenAPI document and its page, and the rate limit."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from openapi_spec_validator import validate

from portal.client import MemoryClient, RateLimited

from .conftest import API, World

TABLE = {
    "/people/{owner_id}/memories": {"get", "post"},
    "/people/{owner_id}/memories/{memory_id}": {"get", "patch", "delete"},
    "/people/{owner_id}/memories/{memory_id}/undo": {"post"},
    "/people/{owner_id}/memories/{memory_id}/history": {"get"},
    "/people/{owner_id}/recall": {"post"},
    "/people/{owner_id}/portrait": {"get"},
    "/people/{owner_id}/consolidate": {"post"},
    "/people/{owner_id}/used": {"post"},
    "/people/{owner_id}/unseen": {"get"},
    "/people/{owner_id}/seen": {"post"},
    "/people/{owner_id}/settings": {"get", "put"},
    "/people/{owner_id}/export": {"get"},
    "/people/{owner_id}": {"delete"},
    "/tools": {"get"},
    "/people/{owner_id}/tools/{name}": {"post"},
}


def test_liveness_and_readiness(any_world: World) -> None:
    raw = any_world.raw()
    assert (raw.get("/healthz").status_code, raw.get("/healthz").json) == (200, {"status": "ok"})
    ready = raw.get("/readyz")
    assert ready.status_code == 200 and ready.json["status"] == "ready" and ready.json["database"] == "ok"


def test_metrics_count_requests_by_route_and_status_and_hold_no_words_or_people(world: World) -> None:
    owner, words = "ada-7f3c9e", "zanzibar marmalade"
    with world.client() as memory:
        saved = memory.remember(owner, f"Likes {words}")
        memory.recall(owner, words)
        memory.list(owner)
        with pytest.raises(Exception):  # noqa: B017 - any refusal will do
            memory.remember(owner, "   ")
    metrics = world.raw().get("/metrics")
    assert metrics.status_code == 200 and metrics.mimetype == "text/plain"
    body = metrics.get_data(as_text=True)
    counts = {(m[0], m[1]): float(m[2]) for m in
              re.findall(r'memory_api_requests_total\{route="([^"]+)",status="(\d+)"\} ([0-9.e+]+)', body)}
    assert counts[("remember", "201")] >= 1 and counts[("remember", "422")] >= 1
    assert counts[("recall", "200")] >= 1 and counts[("list_memories", "200")] >= 1
    assert "memory_api_request_seconds_bucket" in body
    for secret in (owner, "zanzibar", "marmalade", saved.memory.id, world.tenant_a, world.keys["a"][:20]):
        assert secret not in body


def test_the_openapi_document_is_3_1_and_describes_every_endpoint(world: World) -> None:
    answer = world.raw().get(f"{API}/openapi.json")
    assert answer.status_code == 200 and answer.mimetype == "application/json"
    doc = answer.json
    assert doc["openapi"] == "3.1.0"
    validate(doc)
    paths = {path.removeprefix(API): {m for m in item if m in ("get", "post", "put", "patch", "delete")}
             for path, item in doc["paths"].items()}
    for path, methods in TABLE.items():
        assert methods <= paths.get(path, set()), path
    remember = doc["paths"][f"{API}/people/{{owner_id}}/memories"]["post"]
    assert "201" in remember["responses"] and "422" in remember["responses"]
    assert {p["name"] for p in remember["parameters"]} >= {"owner_id", "Idempotency-Key"}
    schemas = doc["components"]["schemas"]
    assert {"text", "kind", "importance", "pinned"} <= set(schemas["RememberIn"]["properties"])
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_the_docs_page_lists_every_endpoint(world: World) -> None:
    answer = world.raw().get(f"{API}/docs")
    assert answer.status_code == 200 and answer.mimetype == "text/html"
    page = answer.get_data(as_text=True)
    for path in TABLE:
        assert path.replace("{", "").replace("}", "") in page.replace("{", "").replace("}", ""), path


@pytest.fixture
def limited(make_world: Callable[..., World], sqlite_engine: Any) -> World:
    return make_world(sqlite_engine, flask={"API_RATE_LIMIT": "3/minute"})


def test_over_the_rate_limit_is_429_with_retry_after(limited: World) -> None:
    with limited.client() as memory:
        for _ in range(3):
            memory.list("ada")
        with pytest.raises(RateLimited) as limited_error:
            memory.list("ada")
        assert (limited_error.value.status, limited_error.value.code) == (429, "rate_limited")
        assert limited_error.value.retry_after is not None and 0 < limited_error.value.retry_after <= 60
        assert memory.last_response is not None
        assert memory.last_response.headers["content-type"].startswith("application/problem+json")
    with limited.client("b") as other:  # one bucket per key
        assert other.list("ada").items == []


def test_the_rate_limit_counts_writes_and_wrong_keys_too(limited: World) -> None:
    raw = limited.raw()
    statuses = [raw.post(f"{API}/people/ada/memories", json={"text": f"Fact {i}"}, headers=limited.auth()).status_code
                for i in range(4)]
    assert statuses == [201, 201, 201, 429] and limited.count() == 3
    wrong = [raw.get(f"{API}/people/ada/memories", headers={"Authorization": "Bearer mp_wrong"}).status_code
             for _ in range(4)]
    assert wrong == [401, 401, 401, 429]


def test_the_client_reaches_a_root_with_or_without_the_prefix(world: World) -> None:
    import httpx

    for base in ("http://portal.test", "http://portal.test/", "http://portal.test/api/v1", "http://portal.test/api/v1/"):
        with MemoryClient(base, world.keys["a"], transport=httpx.WSGITransport(app=world.app)) as memory:
            assert memory.get_settings("ada") is False


def test_the_no_server_error_guard_sees_every_answer(world: World) -> None:
    # make_world fails a test at teardown when any answer was 5xx; this proves it is watching.
    world.raw().get("/healthz")
    world.raw().get(f"{API}/people/ada/memories", headers=world.auth())
    world.raw().get(f"{API}/people/ada/memories")
    assert world.recorder.seen[-3:] == [("GET", "/healthz", 200), ("GET", f"{API}/people/ada/memories", 200),
                                        ("GET", f"{API}/people/ada/memories", 401)]
