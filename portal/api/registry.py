"""Declaring API endpoints once: routing, authentication, body and query parsing, idempotency,
and the OpenAPI 3.1 document, all from the same declaration and the pydantic models. The
document itself is generated in `portal.api.openapi`.

A handler receives a `Call` (the key's tenant and permissions, the place, the parsed body and
query) and returns `Reply(status, model)`. It stays a thin shell over one service call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response, current_app, g, request
from pydantic import BaseModel, ValidationError

from portal.api.auth import authenticate, service
from portal.api.openapi import JSON, openapi_document
from portal.api.problems import ApiProblem, problem, service_problem
from portal.api.schemas import Problem
from portal.domain.errors import Conflict, NotFound, Refused
from portal.domain.types import Place
from portal.inputs import BadJson, is_valid_id, is_valid_text, load_json
from portal.services.idempotency import Answer, check_key, once, request_hash

MAX_BODY = 64 * 1024


@dataclass
class Call:
    key: Any
    person: Place | None
    body: Any
    query: Any
    path: dict[str, str]

    @property
    def place(self) -> Place:
        """The person's place: `owner_id` from the path, the scope from the key's tenant."""
        if self.person is None:
            raise ApiProblem(400, "invalid_owner")
        return self.person


@dataclass
class Reply:
    status: int
    model: BaseModel | list[Any] | dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Route:
    name: str
    method: str
    rule: str
    summary: str
    permission: str | Callable[[dict[str, str]], str] | None
    body: type[BaseModel] | None
    query: type[BaseModel] | None
    responses: dict[int, Any]
    max_body: int
    handler: Callable[[Call], Reply]
    public: bool = False
    etag: bool = False
    redactable: bool = False
    receipts: bool | Callable[[dict[str, str]], bool] = True


class Api:
    """The routes of one blueprint and the OpenAPI document describing them."""

    def __init__(self, blueprint: Blueprint, title: str, version: str) -> None:
        self.blueprint = blueprint
        self.title = title
        self.version = version
        self.routes: list[Route] = []

    def route(
        self, method: str, rule: str, *, summary: str, permission: str | Callable[[dict[str, str]], str] | None = None,
        body: type[BaseModel] | None = None, query: type[BaseModel] | None = None,
        responses: dict[int, Any] | None = None, max_body: int = MAX_BODY, public: bool = False,
        etag: bool = False, redactable: bool = False, receipts: bool | Callable[[dict[str, str]], bool] = True,
    ) -> Callable[[Callable[[Call], Reply]], Callable[[Call], Reply]]:
        """Declare an endpoint. `etag`: a 200 answer is a memory, sent with `ETag: "<revision>"`.
        `redactable`: success answers name a memory, so a replay after it changed or went is `Redacted`.
        `receipts=False` (or a function of the path answering False): an Idempotency-Key is checked
        and nothing is stored — for reads sent as POST, which are safe to run again, and for the
        erasure of a person, after which no row may name them (a retry erases what is left)."""

        def register(handler: Callable[[Call], Reply]) -> Callable[[Call], Reply]:
            route = Route(handler.__name__, method, rule, summary, permission, body, query, responses or {},
                          max_body, handler, public, etag, redactable, receipts)
            self.routes.append(route)
            self.blueprint.add_url_rule(
                rule, endpoint=route.name, view_func=lambda **path: self._serve(route, path), methods=[method]
            )
            return handler

        return register

    # ------------------------------------------------------------------ serving

    def _serve(self, route: Route, path: dict[str, str]) -> Response:
        g.api_route = route.name
        check_path(path)
        needed = route.permission(path) if callable(route.permission) else route.permission
        key = None if route.public else authenticate(needed)
        place = Place(path["owner_id"], key.tenant_id if key else "") if "owner_id" in path else None
        call = Call(key, place, self._body(route), self._query(route), path)
        idem_key = request.headers.get("Idempotency-Key")
        if idem_key is None or route.method == "GET" or place is None:
            return self._render(route, route.handler(call))
        stores = route.receipts(path) if callable(route.receipts) else route.receipts
        if not stores:
            check_key(idem_key)
            return self._render(route, route.handler(call))
        # The same JSON spelt differently (key order, spacing) is the same request.
        digest = request_hash(route.method, request.path, _canonical(request.get_data(as_text=True)), key.id if key else "",
                              secret=str(current_app.config["SECRET_KEY"]).encode())
        runtime = current_app.extensions["memory_runtime"]
        replies: list[Reply] = []

        def run() -> Answer:
            try:
                replies.append(route.handler(call))
            except (NotFound, Conflict, Refused) as exc:
                # The service's answer, kept like any other: a retry is told the same thing.
                replies.append(Reply(*service_problem(exc)))
            return self._answer(replies[0])

        # Through the app's view of the store: a person who blocked the app is not answered a replay.
        answer, replayed = once(service().store, place, idem_key, digest, run, runtime.service.clock,
                                lease=runtime.service.options.lease_seconds)
        response = self._response(answer.status, answer.body)
        if replayed:
            response.headers["Idempotent-Replayed"] = "true"
        elif replies:
            response.headers.update(replies[0].headers)  # a replay has no headers stored
        self._etag(route, answer, response)
        return response

    def _body(self, route: Route) -> Any:
        if route.body is None:
            return None
        length = request.content_length
        if length is not None and length > route.max_body:
            raise ApiProblem(413, "body_too_large", f"bodies are limited to {route.max_body} bytes")
        mimetype = request.mimetype or ""
        if mimetype != JSON and not mimetype.endswith("+json"):
            raise ApiProblem(415, "unsupported_media_type", "send application/json")
        raw = request.get_data(cache=True)
        if len(raw) > route.max_body:
            raise ApiProblem(413, "body_too_large", f"bodies are limited to {route.max_body} bytes")
        return _validated(route.body, parse_json(raw or b"null"))

    def _query(self, route: Route) -> Any:
        if route.query is None:
            return None
        raw: dict[str, Any] = {}
        for name in request.args:
            values = request.args.getlist(name)
            if not all(is_valid_text(v) for v in (name, *values)):
                raise ApiProblem(400, "invalid_text", "a query parameter holds a NUL or a lone surrogate")
            raw[name] = values[-1] if len(values) == 1 else values
        return _validated(route.query, raw)

    @staticmethod
    def _answer(reply: Reply) -> Answer:
        body: Any = reply.model
        if isinstance(body, Problem):  # the same body the error handlers answer (no actual_revision: null)
            body = {**body.model_dump(mode="json", exclude_none=True), "detail": body.detail}
        elif isinstance(body, BaseModel):
            body = body.model_dump(mode="json")
        elif isinstance(body, list):
            body = {"__list__": [b.model_dump(mode="json") if isinstance(b, BaseModel) else b for b in body]}
        return Answer(reply.status, body)

    def _render(self, route: Route, reply: Reply) -> Response:
        answer = self._answer(reply)
        response = self._response(answer.status, answer.body)
        response.headers.update(reply.headers)
        self._etag(route, answer, response)
        return response

    @staticmethod
    def _etag(route: Route, answer: Answer, response: Response) -> None:
        """The memory's revision as its ETag: on the answer and on its replays (a redacted one has none)."""
        revision = answer.body.get("revision") if route.etag and answer.status == 200 and answer.body else None
        if isinstance(revision, int):
            response.headers["ETag"] = f'"{revision}"'

    @staticmethod
    def _response(status: int, body: dict[str, Any] | None) -> Response:
        if status == 204 or body is None:
            return Response(status=status)
        payload = body["__list__"] if set(body) == {"__list__"} else body
        mimetype = "application/problem+json" if status >= 400 else JSON
        return Response(json.dumps(payload, ensure_ascii=False), status=status, mimetype=mimetype)

    # ------------------------------------------------------------------ OpenAPI

    def openapi(self, prefix: str) -> dict[str, Any]:
        """The OpenAPI 3.1 document, generated from the routes and their models."""
        return openapi_document(self.routes, self.title, self.version, prefix)


def parse_json(raw: str | bytes) -> Any:
    """A request's JSON, by `portal.inputs.load_json`'s rules, or a 400 with its code."""
    try:
        return load_json(raw)
    except BadJson as exc:
        raise ApiProblem(400, exc.code, exc.detail) from None
    except (ValueError, UnicodeDecodeError):
        raise ApiProblem(400, "malformed_json", "the body is not valid JSON") from None


def check_path(path: dict[str, str]) -> None:
    """Every id in the path by the one id rule, before anything else runs (400 `invalid_owner` for
    the person, `invalid_id` for any other); a tool's name is checked by the tool registry."""
    for name, value in path.items():
        if name != "name" and not is_valid_id(value):
            code = "invalid_owner" if name == "owner_id" else "invalid_id"
            raise ApiProblem(400, code, f"{name} must be 1 to 200 characters, with no control character, "
                                        "\"/\" or dot segment")


def _canonical(body: str) -> Any:
    try:
        return json.loads(body) if body else None
    except (ValueError, RecursionError):
        return body


def _validated(model: type[BaseModel], data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        first: dict[str, Any] = dict(errors[0]) if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise ApiProblem(400, "invalid_request", f"{where}: {first.get('type', 'invalid')}") from None


__all__ = ["Api", "Call", "Reply", "problem"]
