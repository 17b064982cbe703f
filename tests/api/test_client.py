"""What the client itself guarantees: errors built from problem+json (and from answers that are
not), no redirect followed, owner ids sent exactly, RFC 3339 times as aware datetimes, stable
request bodies for idempotent retries."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from portal.client import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    MemoryClient,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    Refused,
    Unauthorized,
)
from portal.client.models import parse_time

from .conftest import World


def answering(status: int, body: bytes, content_type: str = "application/problem+json",
              **headers: str) -> tuple[MemoryClient, list[httpx.Request]]:
    """A client whose transport answers one canned response (a proxy or a load balancer talking)."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, content=body, headers={"Content-Type": content_type, **headers})

    return MemoryClient("http://portal.test", "mp_key", transport=httpx.MockTransport(handler)), seen


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, BadRequest), (401, Unauthorized), (403, Forbidden), (404, NotFound), (409, Conflict), (413, PayloadTooLarge),
     (422, Refused), (500, ApiError), (503, ApiError)],
)
def test_errors_are_typed_by_status_and_keep_the_code(status: int, kind: type[ApiError]) -> None:
    body = json.dumps({"type": "about:blank", "title": "t", "status": status, "detail": "why", "code": "some_code",
                       "actual_revision": 7 if status == 409 else None}).encode()
    client, _ = answering(status, body)
    with pytest.raises(kind) as error:
        client.get_settings("ada")
    assert type(error.value) is kind
    assert (error.value.status, error.value.code, error.value.detail) == (status, "some_code", "why")
    assert error.value.actual_revision == (7 if status == 409 else None)


def test_an_answer_that_is_no_problem_json_still_raises_an_api_error() -> None:
    client, _ = answering(502, b"<html>Bad gateway</html>", "text/html")
    with pytest.raises(ApiError) as error:
        client.list("ada")
    assert (error.value.status, error.value.code) == (502, "http_502")


def test_a_success_that_is_not_json_raises() -> None:
    client, _ = answering(200, b"<html>captive portal</html>", "text/html")
    with pytest.raises(ApiError) as error:
        client.get_settings("ada")
    assert error.value.code == "invalid_response"


def test_a_redirect_is_never_followed() -> None:
    client, seen = answering(308, b"", "text/html", Location="http://portal.test/api/v1/people/bob/memories/m1")
    with pytest.raises(ApiError) as error:
        client.forget("ada", "m1")
    assert error.value.status == 308 and len(seen) == 1


def test_rate_limited_carries_retry_after() -> None:
    body = json.dumps({"status": 429, "code": "rate_limited", "title": "Too many requests"}).encode()
    client, _ = answering(429, body, **{"Retry-After": "17"})
    with pytest.raises(RateLimited) as error:
        client.list("ada")
    assert error.value.retry_after == 17.0


def test_requests_carry_the_key_and_compact_stable_bodies_without_defaults() -> None:
    client, seen = answering(500, b"{}")
    for _ in range(2):
        with pytest.raises(ApiError):
            client.remember("ada", "Prefers tea", idempotency_key="turn-1")
    first, second = seen
    assert first.headers["Authorization"] == "Bearer mp_key" and first.headers["Idempotency-Key"] == "turn-1"
    assert first.headers["Content-Type"] == "application/json"
    assert first.content == second.content == b'{"text":"Prefers tea"}'
    with pytest.raises(ApiError):
        client.update("ada", "m1", text="x", if_revision=3)
    assert seen[-1].headers["If-Match"] == '"3"' and json.loads(seen[-1].content) == {"text": "x"}
    with pytest.raises(ApiError):
        client.portrait("ada", masked=True, fill=False, max_length=10)
    assert dict(seen[-1].url.params) == {"masked": "true", "fill": "false", "max_length": "10"}


def test_owner_and_memory_ids_are_sent_exactly(world: World) -> None:
    owner = "ada lovelace?#1&x=%2"
    with world.client() as memory:
        saved = memory.remember(owner, "Writes programs")
        assert [m.id for m in memory.list(owner).items] == [saved.memory.id]
        assert memory.get(owner, saved.memory.id).text == "Writes programs"
        assert memory.list("ada lovelace").items == []
    assert world.count(owner) == 1


def test_typed_errors_from_the_real_api(world: World) -> None:
    with world.client() as memory:
        saved = memory.remember("ada", "Lives in Lyon")
        memory.update("ada", saved.memory.id, text="Lives in Paris")
        with pytest.raises(Conflict) as conflict:
            memory.update("ada", saved.memory.id, text="Lives in Nice", if_revision=1)
        assert conflict.value.actual_revision == 2
    with world.client("a_revoked") as memory, pytest.raises(Unauthorized):
        memory.list("ada")
    with MemoryClient("http://portal.test", "mp_nonsense", transport=httpx.WSGITransport(app=world.app)) as memory:
        with pytest.raises(Unauthorized) as unauthorized:
            memory.tools()
        assert unauthorized.value.code == "unauthorized"
    with world.client("a_read") as memory, pytest.raises(Forbidden):
        memory.remember("ada", "Likes jazz")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
     ("2026-01-02T03:04:05.123456Z", datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
     ("2026-01-02T05:04:05+02:00", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
     ("2026-01-02T03:04:05", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))],
)
def test_times_are_aware(text: str, expected: datetime) -> None:
    parsed = parse_time(text)
    assert parsed == expected and parsed.tzinfo is not None


def test_tools_are_ready_for_a_chat_model(world: World) -> None:
    with world.client() as memory:
        tools = memory.tools()
        assert {t["type"] for t in tools} == {"function"}
        remember = next(t["function"] for t in tools if t["function"]["name"] == "remember")
        assert remember["parameters"]["required"] == ["text"] and remember["description"]
        saved = memory.call_tool("ada", "remember", json.dumps({"text": "Likes jazz", "importance": 4}), language="fr")
        assert (saved["ok"], saved["code"]) == (True, "memory_saved") and saved["message"]
        assert saved["undo"] == {"id": saved["memory"]["id"]}
        found = memory.call_tool("ada", "recall", {"query": "jazz"})
        assert [m["id"] for m in found["memories"]] == [saved["memory"]["id"]]
        corrected = memory.call_tool("ada", "update_memory", {"id": saved["memory"]["id"], "text": "Likes free jazz"})
        assert corrected["code"] == "memory_corrected"
        unknown = memory.call_tool("ada", "dance", {})
        assert (unknown["ok"], unknown["reason"]) == (False, "unknown_tool")
        invalid = memory.call_tool("ada", "remember", {"txt": "x"})
        assert (invalid["ok"], invalid["reason"]) == (False, "invalid_arguments")
        forgotten = memory.call_tool("ada", "forget", {"id": saved["memory"]["id"]})
        assert forgotten["code"] == "memory_forgotten" and memory.list("ada").items == []
        with pytest.raises(BadRequest) as bad:
            memory.call_tool("ada", "remember", "{not json")
        assert bad.value.code == "malformed_arguments"


def test_list_pages_cover_everything_once(world: World) -> None:
    with world.client() as memory:
        made = {memory.remember("ada", f"Fact number {i}").memory.id for i in range(11)}
        assert {m.id for m in memory.iter_memories("ada", page_size=4)} == made
        assert len(list(memory.iter_memories("ada", page_size=4))) == 11


def test_memory_times_are_recent_and_ordered(world: World) -> None:
    with world.client() as memory:
        m = memory.remember("ada", "Lives in Lyon").memory
        later = memory.update("ada", m.id, text="Lives in Paris")
    assert later.created_at == m.created_at and later.updated_at >= m.updated_at
    assert datetime.now(UTC) - m.created_at < timedelta(minutes=1)
    assert m.created_at.utcoffset() == UTC.utcoffset(None)
