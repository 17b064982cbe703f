"""Schemathesis over the generated OpenAPI 3.1 document (DESIGN §11): every operation, called
through the WSGI app with a key holding every permission, answers no 5xx and nothing the document
does not describe — status, media type, body schema and declared headers.

The document is read from the app's /api/v1/openapi.json when the module is collected (the routes
do not depend on the database); each operation then runs against its own app on a freshly migrated
SQLite file, with a tenant, a key and two memories seeded for "ada". A walk through the answers
that random inputs seldom reach (a memory restored by undo, tool successes, a replay whose memory
was forgotten since, 401, 429) is checked against the same document.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, settings
from openapi_spec_validator import validate
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.config import SchemathesisConfig
from sqlalchemy.engine import Engine

from portal.adapters.sql.api_keys import ApiKeys
from portal.adapters.sql.engine import make_engine
from portal.app import create_app
from portal.bootstrap import build_runtime
from portal.config import load_config
from portal.domain.options import new_id
from portal.domain.people import PERMISSIONS
from portal.domain.types import Place
from portal.services.tool_schemas import TOOL_NAMES

DOC = "/api/v1/openapi.json"
OWNER = "ada"
MEMORY_IDS = ("5eed0000000000000000000000000001", "5eed0000000000000000000000000002")
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]
NO_LIMIT = "1000000/minute"  # the fuzzer sends thousands of requests with one key


def make_app(engine: Engine, instance: Path, rate_limit: str = NO_LIMIT) -> Flask:
    config = load_config({"MEMORY_INSTANCE_PATH": str(instance), "MEMORY_EMBEDDER": "none",
                          "MEMORY_SECRET_KEY": "k" * 40})
    runtime = build_runtime(config, embedder=None, engine=engine, llm=None)
    return create_app(config={"API_RATE_LIMIT": rate_limit}, runtime=runtime)


def load_schema() -> Any:
    """The document as the app serves it. Half the time the fuzzer aims at the seeded person, the
    seeded memories and the real tools, so that answers about existing data are checked as well
    as the 404s and the refusals."""
    with tempfile.TemporaryDirectory() as instance:
        engine = make_engine("sqlite://")
        try:
            config = SchemathesisConfig.from_dict({
                "dictionaries": {"owners": {"values": [OWNER]}, "memories": {"values": list(MEMORY_IDS)},
                                 "tools": {"values": list(TOOL_NAMES)}},
                "parameters": {
                    "path.owner_id": {"dictionary": "owners", "probability": 0.5},
                    "path.memory_id": {"dictionary": "memories", "probability": 0.5},
                    "path.name": {"dictionary": "tools", "probability": 0.5},
                },
            })
            return schemathesis.openapi.from_wsgi(DOC, make_app(engine, Path(instance)), config=config)
        finally:
            engine.dispose()


schema = load_schema()


def seeded_app(engine: Engine, instance: Path, rate_limit: str = NO_LIMIT) -> tuple[Flask, dict[str, str]]:
    """An app with a tenant, a key holding every permission (as request headers) and two memories
    of OWNER's with the ids MEMORY_IDS."""
    app = make_app(engine, instance, rate_limit)
    runtime = app.extensions["memory_runtime"]
    tenant = runtime.tenants.create("Fuzz")
    _, token = ApiKeys(engine).create(tenant.id, PERMISSIONS, name="fuzzer")
    ids = iter(MEMORY_IDS)
    runtime.service.id_factory = lambda: next(ids, None) or new_id()
    place = Place(OWNER, tenant.id)
    runtime.service.remember(place, "Ada prefers tea to coffee", kind="preference", importance=4)
    runtime.service.remember(place, "Ada's daughter is called Mia", kind="fact", importance=5, pinned=True)
    runtime.service.id_factory = new_id
    return app, {"Authorization": f"Bearer {token}"}


@pytest.fixture
def api(sqlite_engine: Engine, tmp_path: Path) -> tuple[Flask, dict[str, str]]:
    return seeded_app(sqlite_engine, tmp_path)


def test_the_document_is_valid_openapi_3_1(api: tuple[Flask, dict[str, str]]) -> None:
    app, _ = api
    doc = app.test_client().get(DOC).get_json()
    assert doc["openapi"].startswith("3.1")
    validate(doc)
    assert doc == schema.raw_schema


@settings(max_examples=25, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@schema.parametrize()
def test_no_server_error_and_no_answer_outside_the_document(case: Any, api: tuple[Flask, dict[str, str]]) -> None:
    app, auth = api
    response = case.call(app=app, headers=auth)
    case.validate_response(response, checks=CHECKS, headers=auth)


class Caller:
    """Builds schemathesis cases by hand, calls them and validates every answer."""

    def __init__(self, app: Flask, auth: dict[str, str]) -> None:
        self.app, self.auth = app, auth

    def __call__(self, method: str, path: str, status: int, body: Any = None, headers: dict[str, str] | None = None,
                 auth: bool = True, **path_parameters: str) -> Any:
        operation = schema[f"/api/v1{path}"][method]
        sent = {**(self.auth if auth else {}), **(headers or {})}
        kwargs: dict[str, Any] = {"media_type": "application/json", "body": body} if body is not None else {}
        case = operation.Case(path_parameters={"owner_id": OWNER, **path_parameters}, headers=sent, **kwargs)
        response = case.call(app=self.app)
        case.validate_response(response, checks=CHECKS, headers=sent)
        assert response.status_code == status, response.text
        return response


def test_answers_the_fuzzer_seldom_reaches_match_the_document(api: tuple[Flask, dict[str, str]]) -> None:
    call = Caller(*api)
    memory = "/people/{owner_id}/memories/{memory_id}"
    first, second = MEMORY_IDS

    got = call("GET", memory, 200, memory_id=first)
    assert got.headers["etag"] == ['"1"']
    corrected = call("PATCH", memory, 200, {"text": "Ada prefers green tea"},
                     {"If-Match": '"1"', "Idempotency-Key": "fuzz-patch-1"}, memory_id=first)
    again = call("PATCH", memory, 200, {"text": "Ada prefers green tea"},
                 {"If-Match": '"1"', "Idempotency-Key": "fuzz-patch-1"}, memory_id=first)
    assert corrected.headers["etag"] == again.headers["etag"] == ['"2"'] and again.headers["idempotent-replayed"]
    call("PATCH", memory, 409, {"text": "Ada prefers black tea"}, {"If-Match": '"1"'}, memory_id=first)
    call("GET", memory + "/history", 200, memory_id=first)
    restored = call("POST", memory + "/undo", 200, memory_id=first)
    assert restored.json()["memory"]["text"] == "Ada prefers tea to coffee"

    for name, arguments in (("recall", {"query": "tea"}), ("remember", {"text": "Ada plays the cello"}),
                            ("update_memory", {"id": second, "text": "Ada's daughter is Mia"}),
                            ("forget", {"id": second}), ("remember", {"text": ""})):
        call("POST", "/people/{owner_id}/tools/{name}", 200, {"arguments": arguments}, name=name)

    # A write replayed after its memory was forgotten answers its status again, without content.
    key = {"Idempotency-Key": "fuzz-replay-1"}
    saved = call("POST", "/people/{owner_id}/memories", 201, {"text": "Ada walks to work"}, key)
    call("DELETE", memory, 204, memory_id=saved.json()["memory"]["id"])
    replayed = call("POST", "/people/{owner_id}/memories", 201, {"text": "Ada walks to work"}, key)
    assert replayed.json() == {"redacted": True} and replayed.headers["idempotent-replayed"] == ["true"]
    # Another body with that key answers the same: a redacted receipt never tells whether a guess
    # of the first body was right (a 409 for a wrong guess would).
    guessed = call("POST", "/people/{owner_id}/memories", 201, {"text": "Ada runs to work"}, key)
    assert guessed.json() == {"redacted": True}
    tool = {"Idempotency-Key": "fuzz-replay-2"}
    kept = call("POST", "/people/{owner_id}/tools/{name}", 200, {"arguments": {"text": "Ada swims"}}, tool, name="remember")
    call("DELETE", memory, 204, memory_id=kept.json()["memory"]["id"])
    call("POST", "/people/{owner_id}/tools/{name}", 200, {"arguments": {"text": "Ada swims"}}, tool, name="remember")

    call("GET", "/people/{owner_id}/export", 200)
    call("GET", "/people/{owner_id}/settings", 401, auth=False)
    call("DELETE", "/people/{owner_id}", 200)


def test_a_rate_limited_answer_matches_the_document(sqlite_engine: Engine, tmp_path: Path) -> None:
    call = Caller(*seeded_app(sqlite_engine, tmp_path, rate_limit="1/minute"))
    call("GET", "/people/{owner_id}/settings", 200)
    limited = call("GET", "/people/{owner_id}/settings", 429)
    assert limited.headers["retry-after"]
