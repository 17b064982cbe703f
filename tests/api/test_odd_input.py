"""Input no store can keep is refused at the edge with a stable code, on SQLite and PostgreSQL alike
(issue 14): NUL bytes and lone surrogates, ids that are no ids, JSON nested past any sense,
numbers that are not finite, cursors and times with no UTC form. Nothing is stored, nothing 500s
(the world's recorder fails a test on any 5xx)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from .conftest import API, World, endpoints, send

ADA = f"{API}/people/ada"
JSON = {"Content-Type": "application/json"}


def post_raw(world: World, path: str, raw: str) -> Any:
    return world.raw().post(path, data=raw.encode("utf-8", "surrogatepass"), headers=world.auth(**JSON))


@pytest.mark.parametrize("body", [
    '{"text": "Secret pgnulword\\u0000 diagnosis"}',
    '{"text": "Lone \\ud800 surrogate"}',
    '{"text": "Likes jazz", "role": "us\\u0000er"}',
    '{"text": "Likes jazz", "person_name": "A\\udfffda"}',
    '{"text": "Likes jazz", "kind": "fa\\u0000ct"}',
    '{"te\\u0000xt": "Likes jazz"}',
])
def test_text_no_database_can_keep_is_refused_and_nothing_stored(any_world: World, body: str) -> None:
    answer = post_raw(any_world, f"{ADA}/memories", body)
    assert (answer.status_code, answer.mimetype, answer.json["code"]) == (400, "application/problem+json", "invalid_text")
    assert any_world.count() == 0


def test_a_recall_query_or_a_patch_with_a_nul_is_refused(any_world: World) -> None:
    saved = any_world.raw().post(f"{ADA}/memories", json={"text": "Likes jazz"}, headers=any_world.auth())
    memory_id = saved.json["memory"]["id"]
    recall = post_raw(any_world, f"{ADA}/recall", '{"query": "ja\\u0000zz"}')
    patch = any_world.raw().patch(f"{ADA}/memories/{memory_id}", data='{"text": "Likes\\u0000 rock"}',
                                  headers=any_world.auth(**JSON))
    listed = any_world.raw().get(f"{ADA}/memories", query_string={"kind": "fa\x00ct"}, headers=any_world.auth())
    assert [r.json["code"] for r in (recall, patch, listed)] == ["invalid_text"] * 3
    assert any_world.raw().get(f"{ADA}/memories/{memory_id}", headers=any_world.auth()).json["text"] == "Likes jazz"


@pytest.mark.parametrize(("owner", "code"), [("a%00b", "invalid_owner"), ("%2E%2E", "invalid_owner"),
                                             ("o" * 201, "invalid_owner")])
def test_an_owner_that_is_no_id_is_400_on_every_endpoint(any_world: World, owner: str, code: str) -> None:
    for endpoint in endpoints(owner, "0" * 32):
        if "/people/" not in endpoint.path:
            continue
        answer = send(any_world.raw(), endpoint, any_world.auth())
        assert (answer.status_code, answer.json["code"]) == (400, code), endpoint.name


@pytest.mark.parametrize("memory_id", ["a%00b", "%2E%2E", ".", "m" * 201])
def test_a_memory_id_that_is_no_id_is_400(any_world: World, memory_id: str) -> None:
    for method in ("GET", "DELETE", "PATCH"):
        answer = any_world.raw().open(f"{ADA}/memories/{memory_id}", method=method, json={"importance": 4},
                                      headers=any_world.auth())
        assert (answer.status_code, answer.json["code"]) == (400, "invalid_id"), method


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("levels", [65, 1_000, 10_000])
def test_json_nested_past_sense_is_400_json_too_deep(world: World, levels: int) -> None:
    remember = post_raw(world, f"{ADA}/memories", '{"text": "Likes jazz", "extra": ' + deep(levels) + "}")
    tool = post_raw(world, f"{ADA}/tools/remember", '{"arguments": {"text": ' + deep(levels) + "}}")
    as_text = post_raw(world, f"{ADA}/tools/remember", json.dumps({"arguments": '{"text": ' + deep(levels) + "}"}))
    assert [r.json["code"] for r in (remember, tool, as_text)] == ["json_too_deep"] * 3
    assert world.count() == 0


@pytest.mark.parametrize("importance", ["NaN", "Infinity", "-Infinity", "1e999", "true", "false", "null"])
def test_an_importance_that_is_no_finite_number_is_refused(world: World, importance: str) -> None:
    answer = post_raw(world, f"{ADA}/memories", '{"text": "Likes jazz", "importance": ' + importance + "}")
    if importance == "null":  # null is "not given": the default
        assert answer.status_code == 201
        return
    assert (answer.status_code, answer.json["code"]) == (400, "invalid_request")
    assert world.count() == 0


@pytest.mark.parametrize("importance", ['"4"', "4.6", '"high"', "2"])
def test_numbers_and_words_for_importance_are_still_read(world: World, importance: str) -> None:
    body = json.dumps({"text": f"Likes jazz {importance.strip(chr(34))}"})[:-1] + ', "importance": ' + importance + "}"
    assert post_raw(world, f"{ADA}/memories", body).status_code == 201


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_cursor_or_a_time_with_no_utc_form_is_400(any_world: World, moment: str) -> None:
    cursor = base64.urlsafe_b64encode(json.dumps([moment, "0" * 32]).encode()).decode().rstrip("=")
    listed = any_world.raw().get(f"{ADA}/memories", query_string={"cursor": cursor}, headers=any_world.auth())
    recalled = any_world.raw().post(f"{ADA}/recall", json={"query": "tea", "after": moment}, headers=any_world.auth())
    assert (listed.status_code, listed.json["code"]) == (400, "invalid_cursor")
    assert (recalled.status_code, recalled.json["code"]) == (400, "invalid_time")
