"""The OpenAPI 3.1 document of an `Api`'s routes (`portal.api.registry`), generated from their
declarations and pydantic models: paths and parameters, request bodies, answers, the problems
and headers every endpoint may answer, and the bearer security scheme.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from portal.api.schemas import Problem, Redacted

if TYPE_CHECKING:  # only for annotations: registry imports this module to serve the document
    from portal.api.registry import Route

JSON = "application/json"
PATH_PARAM = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")
COMMON_PROBLEMS = {400: "Malformed request", 401: "Missing or wrong API key", 403: "Missing permission",
                   404: "Not found", 413: "Body too large", 415: "Not JSON", 429: "Too many requests",
                   503: "Database unavailable for a moment: retry after Retry-After seconds"}
# Any write may carry an Idempotency-Key, and any such write may meet a key already used.
IDEMPOTENCY_PROBLEM = (409, "Idempotency-Key reused with another request, or its first request still running")
# Headers every answer of a status carries (problems.py sets them).
COMMON_HEADERS = {
    401: {"WWW-Authenticate": {"description": "The Bearer scheme", "required": True, "schema": {"type": "string"}}},
    429: {"Retry-After": {"description": "Seconds to wait", "required": True, "schema": {"type": "string"}}},
    503: {"Retry-After": {"description": "Seconds to wait", "required": True, "schema": {"type": "string"}}},
}
REPLAYED_HEADER = {"description": "Present on an answer replayed for a reused Idempotency-Key", "required": False,
                   "schema": {"type": "string", "enum": ["true"]}}
ETAG_HEADER = {"description": 'The revision, quoted ("3"): send it back in If-Match', "required": True,
               "schema": {"type": "string", "pattern": '^"[0-9]+"$'}}


def openapi_document(routes: list[Route], title: str, version: str, prefix: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document, generated from the routes and their models."""
    models: set[type[BaseModel]] = {Problem}
    if any(r.redactable for r in routes):
        models.add(Redacted)
    for r in routes:
        models.update(m for m in (r.body, r.query) if m)
        models.update(m for m in r.responses.values() if isinstance(m, type) and issubclass(m, BaseModel))
        models.update(m[0] for m in r.responses.values() if isinstance(m, list))
    ordered = sorted(models, key=lambda m: m.__name__)
    _, top = models_json_schema(
        [(m, "validation" if m in {r.body for r in routes} | {r.query for r in routes} else "serialization")
         for m in ordered],
        ref_template="#/components/schemas/{model}",
    )
    paths: dict[str, Any] = {}
    for r in routes:
        url = prefix + PATH_PARAM.sub(r"{\1}", r.rule)
        paths.setdefault(url, {})[r.method.lower()] = _operation(r)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {
            "schemas": top.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


def _operation(r: Route) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": r.name, "summary": r.summary, "parameters": []}
    if r.handler.__doc__:  # the handler's docstring is the operation's description: said once
        op["description"] = inspect.cleandoc(r.handler.__doc__)
    for name in PATH_PARAM.findall(r.rule):
        op["parameters"].append({"name": name, "in": "path", "required": True,
                                 "schema": {"type": "string", "minLength": 1, "maxLength": 200}})
    if r.query:
        for name, info in r.query.model_fields.items():
            schema = r.query.model_json_schema()["properties"][name]
            op["parameters"].append({"name": name, "in": "query", "required": info.is_required(), "schema": schema})
    if r.method != "GET":
        op["parameters"].append({"name": "Idempotency-Key", "in": "header", "required": False,
                                 "schema": {"type": "string", "minLength": 1, "maxLength": 200,
                                            "pattern": "^[\\x21-\\x7e]+$"}})
    if r.body:
        op["requestBody"] = {"required": True, "content": {JSON: {"schema": _ref(r.body)}}}
    responses: dict[str, Any] = {}
    for status, model in r.responses.items():
        if model is None:
            responses[str(status)] = {"description": "No content"}
        elif isinstance(model, list):
            responses[str(status)] = {"description": "OK",
                                      "content": {JSON: {"schema": {"type": "array", "items": _ref(model[0])}}}}
        else:
            kind = "application/problem+json" if status >= 400 else JSON
            answered: dict[str, Any] = _ref(model)
            if r.redactable and status < 300:
                answered = {"anyOf": [answered, _ref(Redacted)]}
            responses[str(status)] = {"description": model.__doc__ or "OK", "content": {kind: {"schema": answered}}}
        if r.method != "GET":
            responses[str(status)]["headers"] = {"Idempotent-Replayed": REPLAYED_HEADER}
        if r.etag and status == 200:
            # A write's replay after its memory was forgotten has no revision to name.
            etag = ETAG_HEADER if r.method == "GET" else {**ETAG_HEADER, "required": False}
            responses[str(status)].setdefault("headers", {})["ETag"] = etag
    common = dict(COMMON_PROBLEMS)
    if r.method != "GET":
        common.setdefault(*IDEMPOTENCY_PROBLEM)
    for status, title in sorted(common.items()):
        if r.public and status in (401, 403):
            continue
        responses.setdefault(str(status), {"description": title,
                                           "content": {"application/problem+json": {"schema": _ref(Problem)}}})
    for status, headers in COMMON_HEADERS.items():
        if str(status) in responses:
            responses[str(status)].setdefault("headers", {}).update(headers)
    op["responses"] = responses
    if r.public:
        op["security"] = []
    return op


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}
