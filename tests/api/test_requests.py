"""What the API answers to requests that go wrong before the service is reached: malformed or
misshapen bodies, missing or wrong keys, missing permissions, oversized bodies, wrong content
types, unknown routes. Raw requests, since the client would not send most of them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from portal.domain.people import PERMISSIONS

from .conftest import API, World, endpoints, send, serving

WITH_BODY = [e for e in endpoints("ada", "m") if e.body is not None]


def memory_id(world: World, owner: str = "ada", text: str = "Prefers tea") -> str:
    answer = world.raw().post(f"{API}/people/{owner}/memories", json={"text": text}, headers=world.auth())
    assert answer.status_code == 201
    return str(answer.json["memory"]["id"])


def is_problem(answer, status: int, code: str) -> None:  # type: ignore[no-untyped-def]
    assert answer.status_code == status, answer.get_data(as_text=True)
    assert answer.mimetype == "application/problem+json"
    body = answer.json
    assert (body["status"], body["code"]) == (status, code)
    assert body["type"] == "about:blank" and body["title"]
    assert isinstance(body["detail"], str) and body["detail"].strip(), body  # why, in words: never null


@pytest.mark.parametrize("raw", [b'{"text": ', b"{'text': 'x'}", b"\xff\xfe\x00", b"[1, 2,]", b"NaN-ish"])
def test_malformed_json_is_400(world: World, raw: bytes) -> None:
    for endpoint in WITH_BODY:
        answer = world.raw().open(endpoint.path, method=endpoint.method, data=raw,
                                  headers=world.auth(**{"Content-Type": "application/json"}))
        is_problem(answer, 400, "malformed_json")


@pytest.mark.parametrize("body", [None, [], "text", 42, {"unexpected": True}], ids=["null", "list", "str", "int", "extra"])
def test_a_body_of_the_wrong_shape_is_400_invalid_request(world: World, body: object) -> None:
    for endpoint in WITH_BODY:
        answer = world.raw().open(endpoint.path, method=endpoint.method, data=json.dumps(body),
                                  headers=world.auth(**{"Content-Type": "application/json"}))
        is_problem(answer, 400, "invalid_request")
        assert answer.json["detail"]


@pytest.mark.parametrize(
    "body",
    [{"text": 3}, {"text": "x", "importance": [1]}, {"text": "x", "on_duplicate": "merge"}, {"text": "x", "explicit": "maybe"},
     {"text": "x" * 10_001}, {"text": "x", "kind": "k" * 65}],
)
def test_remember_fields_of_the_wrong_type_are_400(world: World, body: dict[str, object]) -> None:
    answer = world.raw().post(f"{API}/people/ada/memories", json=body, headers=world.auth())
    is_problem(answer, 400, "invalid_request")
    assert world.count() == 0


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_that_is_not_json_is_415(world: World, content_type: str | None) -> None:
    headers = world.auth()
    if content_type:
        headers["Content-Type"] = content_type
    for endpoint in WITH_BODY:
        answer = world.raw().open(endpoint.path, method=endpoint.method, data=json.dumps(endpoint.body), headers=headers)
        is_problem(answer, 415, "unsupported_media_type")
    assert world.count() == 0


def test_json_with_a_charset_and_problem_json_types_are_accepted(world: World) -> None:
    for content_type in ("application/json; charset=utf-8", "application/merge-patch+json"):
        answer = world.raw().post(f"{API}/people/ada/memories", data=json.dumps({"text": f"Likes {content_type}"}),
                                  headers=world.auth(**{"Content-Type": content_type}))
        assert answer.status_code == 201, content_type


def test_a_body_over_64_kib_is_413(world: World) -> None:
    for endpoint in WITH_BODY:
        if endpoint.name == "consolidate":
            continue  # takes up to 1 MiB (below)
        body = {**endpoint.body, "padding": "x" * (64 * 1024)}
        answer = world.raw().open(endpoint.path, method=endpoint.method, json=body, headers=world.auth())
        is_problem(answer, 413, "body_too_large")
    assert world.count() == 0


def test_a_body_just_under_64_kib_is_read(world: World) -> None:
    body = json.dumps({"text": "Likes jazz"}) + " " * (64 * 1024 - 30)
    assert len(body) <= 64 * 1024
    answer = world.raw().post(f"{API}/people/ada/memories", data=body, headers=world.auth(**{"Content-Type": "application/json"}))
    assert answer.status_code == 201


def test_consolidate_takes_up_to_1_mib_and_refuses_above(world: World) -> None:
    url = f"{API}/people/ada/consolidate"
    turns = [{"role": "user", "text": f"Turn {i}: " + "I like tea. " * 750} for i in range(100)]
    big = {"transcript": turns, "ref": "conv-big"}  # about 900 kB: over 64 KiB, under 1 MiB
    assert 64 * 1024 < len(json.dumps(big)) < 1024 * 1024
    answer = world.raw().post(url, json=big, headers=world.auth())
    assert answer.status_code == 200 and answer.json["status"] == "unavailable"  # no LLM in this world
    over = {"transcript": turns + turns[:20], "ref": "conv-bigger"}
    assert len(json.dumps(over)) > 1024 * 1024
    is_problem(world.raw().post(url, json=over, headers=world.auth()), 413, "body_too_large")


@pytest.mark.parametrize("size", [6_000, 900_000])
def test_a_string_transcript_longer_than_5000_characters_is_accepted(world: World, size: int) -> None:
    body = {"transcript": ("I like tea. " * (size // 12 + 1))[:size], "ref": f"conv-{size}"}
    answer = world.raw().post(f"{API}/people/ada/consolidate", json=body, headers=world.auth())
    assert answer.status_code == 200 and answer.json["status"] == "unavailable"


def test_a_declared_length_over_the_limit_is_413_before_the_body_is_read(world: World) -> None:
    # A lying Content-Length: the API must not wait for or read 10 MB.
    environ = {"CONTENT_LENGTH": str(10 * 1024 * 1024)}
    answer = world.raw().post(f"{API}/people/ada/memories", data=b'{"text": "x"}', environ_overrides=environ,
                              headers=world.auth(**{"Content-Type": "application/json"}))
    assert answer.status_code == 413


@pytest.mark.parametrize(("size", "status"), [(1000, 201), (70 * 1024, 413), (2 * 1024 * 1024, 413)])
def test_a_chunked_body_without_a_length_is_held_to_the_same_limits(world: World, size: int, status: int) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"text": "Likes jazz", "importance": 3'
        yield b" " * (size - 40)
        yield b"}"

    with serving(world) as url:
        answer = httpx.post(f"{url}{API}/people/ada/memories", content=chunks(), timeout=30,
                            headers=world.auth(**{"Content-Type": "application/json"}))
    assert "content-length" not in answer.request.headers and answer.request.headers["transfer-encoding"] == "chunked"
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/" + ("json" if status == 201 else "problem+json"))
    assert world.count() == (1 if status == 201 else 0)


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer   ", "Basic YWRhOmFkYQ==", "Bearer mp_nope", "Bearer mp_" + "0" * 32 + "_" + "x" * 43,
     "Token mp_abc"],
    ids=["missing", "empty", "no-token", "blank-token", "basic", "malformed", "unknown", "other-scheme"],
)
def test_a_missing_or_wrong_key_is_401_on_every_endpoint(world: World, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    for endpoint in endpoints("ada", "0" * 32):
        answer = send(world.raw(), endpoint, headers)
        is_problem(answer, 401, "unauthorized")
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    assert world.count() == 0


def test_a_revoked_key_is_401_and_a_wrong_secret_for_a_real_key_id_too(world: World) -> None:
    real = world.keys["a"]
    tampered = real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
    for endpoint in endpoints("ada", "0" * 32):
        for token in (world.keys["a_revoked"], tampered):
            answer = send(world.raw(), endpoint, {"Authorization": f"Bearer {token}"})
            is_problem(answer, 401, "unauthorized")
    assert world.count() == 0


# memories:forget gates the MCP forget tool only (tests/mcp); the API's forget needs memories:write.
@pytest.mark.parametrize("permission", [p for p in PERMISSIONS if p != "memories:forget"])
def test_a_missing_permission_is_403_on_every_endpoint_that_needs_it(world: World, permission: str) -> None:
    ada = memory_id(world)
    needing = [e for e in endpoints("ada", ada) if e.permission == permission]
    assert needing
    for endpoint in needing:
        answer = send(world.raw(), endpoint, world.auth(f"a_without:{permission}"))
        is_problem(answer, 403, "forbidden")
        assert permission in answer.json["detail"]
    # Nothing changed: the memory is there, unpaused, with its one revision.
    assert world.count() == 1
    answer = world.raw().get(f"{API}/people/ada/memories/{ada}", headers=world.auth())
    assert answer.json["revision"] == 1 and answer.json["importance"] == 3
    # A key with that permission alone passes the check on each of them.
    for endpoint in needing:
        if endpoint.name in ("forget", "erase", "undo"):
            continue
        answer = send(world.raw(), endpoint, world.auth(f"a_only:{permission}"))
        assert answer.status_code not in (401, 403), (endpoint.name, answer.status_code)


def test_the_read_only_key_reads_and_cannot_write(world: World) -> None:
    ada = memory_id(world)
    for endpoint in endpoints("ada", ada):
        answer = send(world.raw(), endpoint, world.auth("a_read"))
        if endpoint.permission in ("memories:read", None):
            assert answer.status_code == 200, endpoint.name
        else:
            is_problem(answer, 403, "forbidden")
    assert world.count() == 1


def test_tools_read_or_write_by_the_tool_called(world: World) -> None:
    raw = world.raw()
    recall = raw.post(f"{API}/people/ada/tools/recall", json={"arguments": {"query": "tea"}}, headers=world.auth("a_read"))
    assert recall.status_code == 200 and recall.json["code"] == "memories_found"
    for name, arguments in (("remember", {"text": "x"}), ("update_memory", {"id": "x", "text": "y"}), ("forget", {"id": "x"}),
                            ("no_such_tool", {})):
        answer = raw.post(f"{API}/people/ada/tools/{name}", json={"arguments": arguments}, headers=world.auth("a_read"))
        is_problem(answer, 403, "forbidden")


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [("GET", "/nope", 404, "not_served"), ("GET", "/people/ada", 405, "method_not_allowed"),
     ("POST", "/people/ada/memories/m1/history", 405, "method_not_allowed"), ("PUT", "/tools", 405, "method_not_allowed"),
     ("GET", "/people/ada/memories/m1/undo", 405, "method_not_allowed"), ("GET", "", 404, "not_served")],
)
def test_unknown_routes_and_methods_are_problems(world: World, method: str, path: str, status: int, code: str) -> None:
    answer = world.raw().open(f"{API}{path}", method=method, headers=world.auth())
    is_problem(answer, status, code)


@pytest.mark.parametrize("owner", ["%20", "%20%20", "x" * 201])
def test_an_owner_id_that_is_blank_or_too_long_is_400(world: World, owner: str) -> None:
    for endpoint in endpoints(owner, "m"):
        if endpoint.name == "tools":
            continue
        answer = send(world.raw(), endpoint, world.auth())
        is_problem(answer, 400, "invalid_owner")


@pytest.mark.parametrize("if_match", ["abc", '"1", "2"', "*", '"-1"', '"99999999999"'])
def test_a_malformed_if_match_is_400_and_changes_nothing(world: World, if_match: str) -> None:
    ada = memory_id(world)
    answer = world.raw().patch(f"{API}/people/ada/memories/{ada}", json={"text": "Prefers coffee"},
                               headers=world.auth(**{"If-Match": if_match}))
    is_problem(answer, 400, "invalid_if_match")
    assert world.raw().get(f"{API}/people/ada/memories/{ada}", headers=world.auth()).json["text"] == "Prefers tea"


def test_if_match_takes_the_etag_as_given_weak_or_bare(world: World) -> None:
    ada = memory_id(world)
    url = f"{API}/people/ada/memories/{ada}"
    etag = world.raw().get(url, headers=world.auth()).headers["ETag"]
    assert etag == '"1"'
    for n, if_match in enumerate([etag, 'W/"2"', "3"]):
        answer = world.raw().patch(url, json={"text": f"Prefers tea number {n}"}, headers=world.auth(**{"If-Match": if_match}))
        assert answer.status_code == 200 and answer.headers["ETag"] == f'"{n + 2}"'
    stale = world.raw().patch(url, json={"text": "Prefers coffee"}, headers=world.auth(**{"If-Match": '"1"'}))
    is_problem(stale, 409, "conflict")
    assert stale.json["actual_revision"] == 4


def test_update_of_the_wrong_shape_is_400(world: World) -> None:
    ada = memory_id(world)
    for body in ({"text": 5}, {"pinned": "maybe"}, {"in_place": "sure"}, {"revision": 2}):
        answer = world.raw().patch(f"{API}/people/ada/memories/{ada}", json=body, headers=world.auth())
        is_problem(answer, 400, "invalid_request")
