"""The OpenAPI document and a readable page describing the API."""

from __future__ import annotations

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue

from portal.api.registry import Api


def register(api: Api, bp: Blueprint, prefix: str) -> None:
    cache: dict[str, object] = {}

    def document() -> dict[str, object]:
        if "doc" not in cache:
            cache["doc"] = api.openapi(prefix)
        return cache["doc"]  # type: ignore[return-value]

    @bp.get("/openapi.json")
    def openapi() -> ResponseReturnValue:
        return jsonify(document())

    @bp.get("/docs")
    def docs() -> ResponseReturnValue:
        doc = document()
        operations = [
            {"method": method.upper(), "path": path, **op}
            for path, item in doc["paths"].items()  # type: ignore[attr-defined]
            for method, op in item.items()
        ]
        return render_template("api/docs.html", operations=operations, doc=doc)
