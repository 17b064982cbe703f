"""What mem0's clients send and read, mapped onto ours (the routes are in `portal.api.mem0`).

mem0 names the person `user_id`; here every memory belongs to one person, who can see and erase
it, so a request without one is refused. The agent, app and run ids, metadata, categories,
expiration date and timestamp are kept with the memory (portal.domain.attributes) and narrow a
search, a listing or a deletion; the expiration date also sets the memory's expiry (issue 29), so it
is forgotten once the day is over. A field this server does not take is refused with a clear
`detail`, never dropped. Pure functions: no Flask.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from portal.api.problems import ApiProblem
from portal.domain.attributes import ENTITY_NAMES, NAMES
from portal.domain.types import Hit, Memory, Revision
from portal.inputs import is_valid_id, moment_in_utc

# What mem0's clients send that only says how to answer or how they batch: no data to keep.
HINTS = frozenset({"version", "output_format", "async_mode", "org_id", "project_id", "rerank", "fields",
                   "keyword_search", "show_expired", "latest_only", "reference_date"})
# The Vercel AI provider 2.x spreads its own settings into every body (its mem0 key, the host, its
# model's provider and key; mem0's old org and project names): not mem0's fields. Never read, kept
# or given back.
PROVIDER_SETTINGS = frozenset({"mem0ApiKey", "host", "provider", "apiKey", "modelType", "org_name", "project_name"})
# Words for mem0's extraction model. Ours is told only the server's prompt; what a request says is
# data to it, never instructions (portal.services.transcript): taken, not followed.
EXTRACTION_HINTS = frozenset({"includes", "excludes", "custom_categories", "custom_instructions",
                              "agent_custom_instructions"})
# An add's options, which LangChain.js spreads into its reads too: nothing to do on a read.
ADD_OPTIONS = frozenset({"infer", "immutable", "async_mode", *EXTRACTION_HINTS})
FALSE, TRUE = (False, "false", "False"), (True, "true", "True")
DATE_FIELDS = ("created_at",)
DATE_OPERATORS = {"gte": "after", "gt": "after", "lte": "before", "lt": "before"}


def unsupported(field: str) -> ApiProblem:
    return ApiProblem(400, "unsupported_field", f"this server does not take `{field}`")


def check_fields(body: dict[str, Any], allowed: set[str] | frozenset[str]) -> None:
    """Refuse a field this server would have to drop (any but `allowed`, the hints and a provider's
    settings) when set. `enable_graph` is taken false, and refused true: there is no graph here."""
    for name, value in body.items():
        if name == "enable_graph":
            no_graph(value)
        elif name not in allowed and name not in HINTS and name not in PROVIDER_SETTINGS and value is not None:
            raise unsupported(name)


def no_graph(value: Any) -> None:
    if value in TRUE:
        raise ApiProblem(400, "no_graph", "this server keeps no graph memory (no entities or relations): "
                                          "enable_graph must be false")
    if value is not None and value not in FALSE:
        raise ApiProblem(400, "invalid_request", "enable_graph must be true or false")


@dataclass(frozen=True, slots=True)
class Narrowed:
    """What mem0 filters ask for, in our terms: one person, a time window on creation, and what
    the memories must carry (portal.domain.attributes.matches)."""

    user_id: str
    after: datetime | None = None
    before: datetime | None = None
    wanted: dict[str, Any] | None = None


def narrowed(filters: Any, user_id: Any = None, beside: dict[str, Any] | None = None) -> Narrowed:
    """The person and dates of mem0 `filters` (`{"user_id": ...}`, `{"AND": [...]}`, `{"OR": [...]}`
    of ids, categories and metadata, `{"user_id": {"in": [one]}}`, `{"created_at": {"gte": ...}}`),
    with a top-level `user_id` and what a read names `beside` them (the agent, app and run ids,
    metadata and categories of mem0's 1.x reads, its `start_date` and `end_date`), all of which hold.
    One person, always: an OR is read inside that person's memories, and a branch naming another is
    refused (400), as is anything else this server cannot read."""
    found: dict[str, Any] = {}
    if user_id is not None:
        found["user_id"] = _one_person(user_id)
    if filters is not None:
        _walk(filters, found)
    given = {k: v for k, v in (beside or {}).items() if v is not None}
    _window(given.pop("start_date", None), given.pop("end_date", None), found)
    if given:
        _walk(given, found)
    if "user_id" not in found:
        raise ApiProblem(400, "user_id_required", "every memory here belongs to a person: name them with "
                                                  "user_id (in filters, or in the body of an add)")
    wanted = {k: v for k, v in found.items() if k in NAMES or k == "any_of"}
    return Narrowed(found["user_id"], found.get("after"), found.get("before"), wanted or None)


def attributes_of(body: dict[str, Any], filters: Any = None) -> dict[str, Any] | None:
    """What an add keeps with its memories: the fields it names, the entity ids also in `filters`."""
    given = {name: body.get(name) for name in NAMES if body.get(name) is not None}
    if isinstance(filters, dict):
        given.update({name: filters[name] for name in ENTITY_NAMES if filters.get(name) is not None})
    return given or None


def _walk(filters: Any, found: dict[str, Any]) -> None:
    if not isinstance(filters, dict):
        raise ApiProblem(400, "invalid_filters", "filters must be a JSON object")
    for key, value in filters.items():
        if key == "AND":
            for part in _parts(value):
                _walk(part, found)
        elif key == "OR":
            _either(value, found)
        elif key == "user_id":
            _same(found, "user_id", _one_person(value))
        elif key in ENTITY_NAMES:
            _same(found, key, _one_person(value, key))
        elif key == "categories":
            _same(found, key, _categories(value))
        elif key == "metadata":
            if not isinstance(value, dict) or not value:
                raise ApiProblem(400, "invalid_filters", "metadata takes an object of values to equal")
            for name, equal in value.items():  # AND of metadata conditions: all hold
                _same(found.setdefault(key, {}), name, equal)
        elif key in DATE_FIELDS:
            _dates(key, value, found)
        else:
            raise ApiProblem(400, "unsupported_filter", f"filtering by `{key}` is not supported")


def _either(value: Any, found: dict[str, Any]) -> None:
    """An OR (LlamaIndex's person OR run OR agent): every branch naming a person names the one person;
    a branch that is the person alone holds for each of their memories, so the OR asks nothing more;
    else one of the branches' ids, categories or metadata must hold (`any_of`)."""
    group = []
    for part in _parts(value):
        branch: dict[str, Any] = {}
        _walk(part, branch)
        if "user_id" in branch:
            _same(found, "user_id", branch.pop("user_id"))
        if not set(branch) <= set(NAMES):
            raise ApiProblem(400, "unsupported_filter", "an OR takes ids, categories and metadata (no dates, no OR)")
        group.append(branch)
    if all(group):
        found.setdefault("any_of", []).append(group)


def _window(start: Any, end: Any, found: dict[str, Any]) -> None:
    """mem0's `start_date` and `end_date` (a day, YYYY-MM-DD, or an ISO moment), both included: the
    window of creation, tightening any the filters set."""
    for name, given in (("start_date", start), ("end_date", end)):
        if given is None:
            continue
        try:
            if not isinstance(given, str) or len(given) > 40:
                raise ValueError(name)
            at = moment_in_utc(given, naive_is_utc=True)
            # The window's bounds are exclusive (portal.ports.Filters); a day ends at the next midnight.
            bound = (at - timedelta(microseconds=1) if name == "start_date"
                     else at + (timedelta(days=1) if len(given) == 10 else timedelta(microseconds=1)))
        except (ValueError, OverflowError):
            raise ApiProblem(400, "invalid_filters", f"`{name}` is a day (YYYY-MM-DD) or an ISO moment") from None
        if name == "start_date":
            found["after"] = max(found.get("after") or bound, bound)
        else:
            found["before"] = min(found.get("before") or bound, bound)


def _parts(value: Any) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise ApiProblem(400, "invalid_filters", "AND and OR take a non-empty list")
    return value


def _one_person(value: Any, name: str = "user_id") -> str:
    """One id (`x`, `{"eq": x}`, `{"in": [x]}`): a person, or an agent, app or run."""
    if isinstance(value, dict):
        if set(value) == {"eq"}:
            value = value["eq"]
        elif set(value) == {"in"} and isinstance(value["in"], list) and len(set(map(str, value["in"]))) == 1:
            value = value["in"][0]
        else:
            raise ApiProblem(400, "one_person", f"one {name} per request")
    return one_id(value, name)


def one_id(value: Any, name: str = "user_id") -> str:
    """The one rule for a person (or an agent, app or run) mem0 names, in a body, a query or a path:
    an id by `portal.inputs.is_valid_id`, and never mem0's "every one" wildcard `*` (here people
    are erased and read one by one: a `*` would reach only a person literally named so)."""
    if value == "*":
        raise ApiProblem(400, "one_person", f"one {name} per request: this server has no wildcard")
    if not isinstance(value, str) or not is_valid_id(value):
        raise ApiProblem(400, "invalid_owner" if name == "user_id" else "invalid_filters",
                         f"{name} must be 1 to 200 characters, with no control character, \"/\" or dot segment")
    return value


def _categories(value: Any) -> list[str]:
    """`"a"`, `["a", "b"]`, `{"in": [...]}` or `{"contains": "a"}`: memories carrying each one."""
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list) or not listed or not all(isinstance(c, str) for c in listed):
        raise ApiProblem(400, "invalid_filters", "categories takes a name or a list of names")
    return listed


def _same(found: dict[str, Any], key: str, value: Any) -> None:
    if key in found and found[key] != value:
        if key == "user_id":
            raise ApiProblem(400, "one_person", "a request reads one person's memories: one user_id")
        raise ApiProblem(400, "invalid_filters", f"two different values of `{key}` cannot both hold")
    found[key] = value


def _dates(field: str, value: Any, found: dict[str, Any]) -> None:
    if not isinstance(value, dict) or not value or not set(value) <= set(DATE_OPERATORS):
        raise ApiProblem(400, "invalid_filters", f"`{field}` takes gte, gt, lte or lt with a date")
    for operator, given in value.items():
        try:
            at = moment_in_utc(str(given), naive_is_utc=True)
        except ValueError:
            raise ApiProblem(400, "invalid_filters", f"`{field}.{operator}` is not an ISO date") from None
        if DATE_OPERATORS[operator] in found and found[DATE_OPERATORS[operator]] != at:
            raise ApiProblem(400, "invalid_filters", f"two different bounds for `{field}`")
        found[DATE_OPERATORS[operator]] = at


def memory_item(memory: Memory) -> dict[str, Any]:
    """A memory as mem0's clients read it (get, get_all, update), with our kind and importance."""
    kept = memory.attributes or {}
    return {"id": memory.id, "memory": memory.text, "user_id": memory.owner_id,
            **{name: kept.get(name) for name in ENTITY_NAMES}, "metadata": kept.get("metadata"),
            "categories": kept.get("categories", []), "expiration_date": kept.get("expiration_date"),
            "timestamp": kept.get("timestamp"), "immutable": kept.get("immutable", False),
            "created_at": memory.created_at.isoformat(), "updated_at": memory.updated_at.isoformat(),
            "kind": memory.kind, "importance": memory.importance, "pinned": memory.pinned}


def hit_item(hit: Hit) -> dict[str, Any]:
    """A recall hit as mem0's search answers it: the memory and its score (0 to 1)."""
    return {**memory_item(hit.memory), "score": round(min(max(hit.score, 0.0), 1.0), 6), "match": hit.match}


def history_items(memory: Memory, revisions: list[Revision]) -> list[dict[str, Any]]:
    """A memory's kept wordings, oldest first, as mem0's history: the first an ADD, each later one an
    UPDATE from the wording before it. A wording no longer kept is not there (mem0 keeps them; we
    never do once the person erased them)."""
    ordered = sorted(revisions, key=lambda r: r.revision)
    items: list[dict[str, Any]] = []
    before: str | None = None
    for number, revision in enumerate(ordered):
        at = revision.written_at.isoformat()
        items.append({"id": f"{memory.id}-{revision.revision}", "memory_id": memory.id, "revision": revision.revision,
                      "input": [], "old_memory": before, "new_memory": revision.text, "user_id": memory.owner_id,
                      "event": "ADD" if number == 0 and revision.revision == 1 else "UPDATE",
                      "categories": [], "metadata": None, "created_at": at, "updated_at": at})
        before = revision.text
    return items


def messages_of(messages: Any) -> list[dict[str, str]]:
    """mem0's `messages` (a string, one message or a list of `{role, content}`) as turns."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list) or not messages:
        raise ApiProblem(400, "invalid_messages", "messages must be a string or a non-empty list of {role, content}")
    turns = []
    for message in messages:
        if (not isinstance(message, dict) or not isinstance(message.get("content"), str)
                or message.get("role", "user") not in ("user", "assistant", "system")):
            raise ApiProblem(400, "invalid_messages", "each message is {role: user|assistant|system, content: text}")
        turns.append({"role": str(message.get("role", "user")), "text": message["content"]})
    return turns
