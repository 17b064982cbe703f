"""What mem0's reads (search and the listings of portal.api.mem0) take beside the person and their
filters, as mem0's clients and the integrations built on them send it (issue 39): the agent, app
and run ids, metadata and categories top-level (mem0's 1.x reads), a created-date window
(`start_date`, `end_date`), how many (`top_k`, or `limit`, its older name), the answer's shape
(`output_format`), and an add's options that LangChain.js spreads into its reads. Each narrows
inside the one person a read names (portal.api.mem0_shapes.narrowed): none widens what a key
reads. Pure functions: no Flask.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from portal.api.mem0_shapes import ADD_OPTIONS
from portal.api.problems import ApiProblem

# Beside `user_id`, what a read may name top-level; each must hold, with the filters'.
NARROWING = ("agent_id", "app_id", "run_id", "metadata", "categories", "start_date", "end_date")
SEARCH_FIELDS = frozenset({"query", "filters", "top_k", "limit", "threshold", "user_id", "conversation_ref",
                           *NARROWING, *ADD_OPTIONS})
LIST_FIELDS = frozenset({"filters", "page", "page_size", "top_k", "limit", "user_id", *NARROWING, *ADD_OPTIONS})
SHAPES = {"v1.0": False, "v1.1": True}  # output_format: a bare list, or {"results": [...]}


def beside(given: Mapping[str, Any]) -> dict[str, Any]:
    """What a read names top-level beside the person (`narrowed`'s `beside`)."""
    return {name: given[name] for name in NARROWING if given.get(name) is not None}


def whole(value: Any, name: str, low: int, high: int) -> int:
    """A whole number from `low` to `high`, from a body (a number) or a query string (its digits)."""
    if isinstance(value, bool | float) or (isinstance(value, str) and not value.isdigit()):
        raise ApiProblem(400, "invalid_request", f"{name} must be a whole number")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ApiProblem(400, "invalid_request", f"{name} must be a whole number") from None
    if not low <= number <= high:
        raise ApiProblem(400, "invalid_request", f"{name} must be {low} to {high}")
    return number


def how_many(given: Mapping[str, Any], high: int) -> int | None:
    """`top_k`, else `limit` (mem0's 1.x name for it, which AutoGen, CrewAI and mem0's MCP server
    send): how many a search answers, or a listing's cap. None when neither is given."""
    for name in ("top_k", "limit"):
        if given.get(name) is not None:
            return whole(given[name], name, 1, high)
    return None


def wrapped(given: Mapping[str, Any], default: bool) -> bool:
    """Whether a search answers `{"results": [...]}` (`output_format` "v1.1") or the bare list
    ("v1.0"); `default` when the request does not say (the path's own shape)."""
    shape = given.get("output_format")
    if shape is None:
        return default
    if shape not in SHAPES:
        raise ApiProblem(400, "invalid_request", "output_format is v1.0 (a list) or v1.1 ({\"results\": [...]})")
    return SHAPES[shape]


def query_fields(args: Any) -> dict[str, Any]:
    """mem0's v1 listing's query string as a read's fields: each given once (two values for one name
    would be two people, or two agents), `categories` as a list (repeated, or with commas, as npm's
    client joins them) and `metadata` as the JSON object mem0 documents."""
    fields: dict[str, Any] = {}
    for name in args:
        values = args.getlist(name)
        if name == "categories":
            fields[name] = [c for value in values for c in value.split(",") if c]
            continue
        if len(values) > 1:
            raise ApiProblem(400, "one_person" if name == "user_id" else "invalid_request", f"{name} is given once")
        fields[name] = values[0]
    if "metadata" in fields:
        try:
            fields["metadata"] = json.loads(fields["metadata"])
        except ValueError:
            raise ApiProblem(400, "invalid_filters", "metadata in the query is a JSON object") from None
    return fields
