"""Schemathesis over the generated OpenAPI 3.1 document (DESIGN §11): every operation, called
through the WSGI app with a key holding every permission, answers no 5xx and nothing the document
does not describe — status, media type, body schema and declared headers.

The document is read from the app's /api/v1/openapi.json when the module is collected (the
routes do not depend on the database); each operation then runs against its own app on a
freshly migrated SQLite file, with a tenant, a key and two memories seeded for "ada".
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
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

from portal.adapters.sql.api_keys import PERMISSIONS, ApiKeys
from portal.adapters.sql.engine import make_engine
from portal.bootstrap import build_runtime
from portal.config import load_config
from portal.memory.ports import new_id
from portal.memory.types import Place
from portal.web.app import create_app

DOC = "/api/v1/openapi.json"
OWNER = "ada"
MEMORY_IDS = ("5eed0000000000000000000000000001", "5eed0000000000000000000000000002")
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance] + ([__import__("schemathesis").checks.negative_data_rejection] if __import__("os").environ.get("FUZZ_NEG") else [])


def make_app(engine: Engine, instance: Path) -> Flask:
    config = load_config({"MEMORY_INSTANCE_PATH": str(instance), "MEMORY_EMBEDDER": "none",
                          "MEMORY_SECRET_KEY": "k" * 40})
    return create_app(runtime=build_runtime(config, embedder=None, engine=engine, llm=None))


def load_schema() -> Any:
    """The document as the app serves it; half the time the fuzzer aims at the seeded person and
    memories, so that answers about existing data are checked as well as the 404s."""
    with tempfile.TemporaryDirectory() as instance:
        engine = make_engine("sqlite://")
        try:
            app = make_app(engine, Path(instance))
            config = SchemathesisConfig.from_dict({
                "dictionaries": {"owners": {"values": [OWNER]}, "memories": {"values": list(MEMORY_IDS)}},
                "parameters": {
                    "path.owner_id": {"dictionary": "owners", "probability": 0.5},
                    "path.memory_id": {"dictionary": "memories", "probability": 0.5},
                },
            })
            return schemathesis.openapi.from_wsgi(DOC, app, config=config)
        finally:
            engine.dispose()


schema = load_schema()


@pytest.fixture
def api(sqlite_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Flask, str]]:
    """The app on a migrated SQLite file, and a bearer token with every permission."""
    # The fuzzer sends thousands of requests with one key: lift the per-key rate limit.
    monkeypatch.setenv("MEMORY_API_RATE_LIMIT", "1000000/minute")
    app = make_app(sqlite_engine, tmp_path)
    runtime = app.extensions["memory_runtime"]
    tenant = runtime.tenants.create("Fuzz")
    _, token = ApiKeys(sqlite_engine).create(tenant.id, PERMISSIONS, name="fuzzer")
    ids = iter(MEMORY_IDS)
    runtime.service.id_factory = lambda: next(ids, None) or new_id()
    place = Place(OWNER, tenant.id)
    runtime.service.remember(place, "Ada prefers tea to coffee", kind="preference", importance=4)
    runtime.service.remember(place, "Ada's daughter is called Mia", kind="fact", importance=5, pinned=True)
    runtime.service.id_factory = new_id
    yield app, f"Bearer {token}"


def test_the_document_is_valid_openapi_3_1(api: tuple[Flask, str]) -> None:
    app, _ = api
    doc = app.test_client().get(DOC).get_json()
    assert doc["openapi"].startswith("3.1")
    validate(doc)
    assert doc == schema.raw_schema


@settings(max_examples=int(__import__('os').environ.get('FUZZ_N','25')), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@schema.parametrize()
def test_no_server_error_and_no_answer_outside_the_document(case: Any, api: tuple[Flask, str]) -> None:
    app, authorization = api
    headers = {"Authorization": authorization}
    response = case.call(app=app, headers=headers)
    import os
    if os.environ.get('FUZZ_LOG'):
        with open(os.environ['FUZZ_LOG'], 'a') as f:
            f.write(f"{case.method} {case.path}\t{response.status_code}\t{response.text[:150]!r}\n")
    case.validate_response(response, checks=CHECKS, headers=headers)
