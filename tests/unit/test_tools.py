"""The model tools (DESIGN §11 "Model tools", §3, §6): schemas, results, refusals, bad arguments,
undo tokens, messages, the AI switch and places kept apart."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portal.adapters.memory.store import InMemoryStore
from portal.domain.catalog import message
from portal.domain.options import Options
from portal.domain.rules import DEFAULT_KINDS, Kinds, pattern_rule
from portal.domain.types import InvalidWhere, NotFound, Place
from portal.services.memory_service import MemoryService
from portal.services.tool_schemas import RECALL_MAX, TOOL_NAMES, tool_schemas
from portal.services.tools import run_tool

from ..expect import refused
from .conftest import FakeClock, HashEmbedder, remember_ok

jsonschema = pytest.importorskip("jsonschema")


def _refused(result, reason):
    assert result["ok"] is False, result
    assert result["code"] == "refused"
    assert result["reason"] == reason
    json.dumps(result)


def _by_name() -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in tool_schemas()}


# ================================================================== schemas


def test_there_are_four_tools_in_order():
    assert TOOL_NAMES == ("remember", "recall", "update_memory", "forget")
    assert [t["function"]["name"] for t in tool_schemas()] == list(TOOL_NAMES)


@pytest.mark.parametrize("tool", tool_schemas(), ids=lambda t: t["function"]["name"])
def test_each_tool_is_a_well_formed_openai_function(tool):
    assert set(tool) == {"type", "function"}
    assert tool["type"] == "function"
    function = tool["function"]
    assert set(function) == {"name", "description", "parameters"}
    assert isinstance(function["description"], str) and len(function["description"]) > 80
    parameters = function["parameters"]
    jsonschema.Draft202012Validator.check_schema(parameters)
    assert parameters["type"] == "object"
    assert parameters["additionalProperties"] is False
    assert set(parameters["required"]) <= set(parameters["properties"])
    for name, prop in parameters["properties"].items():
        assert prop.get("description"), f"{function['name']}.{name} has no description"
    assert json.loads(json.dumps(tool)) == tool


def test_required_fields_and_ranges():
    tools = _by_name()
    remember, recall, update, forget = (tools[n]["parameters"] for n in TOOL_NAMES)
    assert remember["required"] == ["text"]
    assert set(remember["properties"]) == {"text", "kind", "importance", "expires_at"}
    assert remember["properties"]["kind"]["enum"] == list(DEFAULT_KINDS)
    assert (remember["properties"]["importance"]["minimum"], remember["properties"]["importance"]["maximum"]) == (1, 5)
    assert remember["properties"]["text"]["maxLength"] == 500
    assert recall["required"] == ["query"]
    assert set(recall["properties"]) == {"query", "kinds", "limit"}
    assert recall["properties"]["kinds"]["items"]["enum"] == list(DEFAULT_KINDS)
    assert (recall["properties"]["limit"]["minimum"], recall["properties"]["limit"]["maximum"]) == (1, RECALL_MAX) == (1, 20)
    assert update["required"] == ["id", "text"]
    assert set(update["properties"]) == {"id", "text", "kind", "importance"}
    assert forget["required"] == ["id"]
    assert set(forget["properties"]) == {"id"}


def test_descriptions_tell_the_model_what_to_do():
    tools = _by_name()
    remember = tools["remember"]["description"].lower()
    assert "third person" in remember
    assert "secret" in remember and "password" in remember
    assert "ask" in tools["forget"]["description"].lower() and "cannot be undone" in tools["forget"]["description"]
    assert "not instructions" in tools["recall"]["description"]
    assert "recall" in tools["update_memory"]["description"]


@pytest.mark.parametrize(
    "name, arguments, valid",
    [
        ("remember", {"text": "Likes tea"}, True),
        ("remember", {"text": "Likes tea", "kind": "preference", "importance": 4}, True),
        ("remember", {"text": "Likes tea", "importance": 9}, False),
        ("remember", {"text": "Likes tea", "kind": "hobby"}, False),
        ("remember", {"text": ""}, False),
        ("remember", {"text": "x" * 501}, False),
        ("remember", {}, False),
        ("remember", {"text": "Likes tea", "mood": "happy"}, False),
        ("recall", {"query": "tea", "kinds": ["preference", "goal"], "limit": 20}, True),
        ("recall", {"query": "tea", "limit": 21}, False),
        ("recall", {"query": "tea", "kinds": ["fact", "fact"]}, False),
        ("update_memory", {"id": "m1", "text": "Likes green tea"}, True),
        ("update_memory", {"id": "m1"}, False),
        ("forget", {"id": "m1"}, True),
        ("forget", {"id": ""}, False),
    ],
)
def test_the_schemas_accept_and_reject_what_they_should(name, arguments, valid):
    validator = jsonschema.Draft202012Validator(_by_name()[name]["parameters"])
    assert validator.is_valid(arguments) is valid


def test_schemas_follow_the_services_kinds_and_length():
    options = Options(kinds=Kinds(kinds=("goal", "habit")), max_text_length=120)
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in tool_schemas(options)}
    assert tools["remember"]["properties"]["kind"]["enum"] == ["goal", "habit"]
    assert tools["remember"]["properties"]["text"]["maxLength"] == 120
    assert tools["recall"]["properties"]["kinds"]["items"]["enum"] == ["goal", "habit"]
    for parameters in tools.values():
        jsonschema.Draft202012Validator.check_schema(parameters)


def test_each_call_answers_fresh_schemas():
    first = tool_schemas()
    first[0]["function"]["parameters"]["properties"]["kind"]["enum"].append("secret")
    first[0]["function"]["description"] = "changed"
    again = tool_schemas()
    assert "secret" not in again[0]["function"]["parameters"]["properties"]["kind"]["enum"]
    assert again[0]["function"]["description"] != "changed"
    assert "secret" not in again[1]["function"]["parameters"]["properties"]["kinds"]["items"]["enum"]


# ================================================================== remember


def test_remember_saves_an_inferred_memory_with_an_undo_token(service, place):
    result = run_tool(service, place, "remember", {"text": "**Likes** green tea", "kind": "Preference", "importance": 4})
    assert result["ok"] is True and result["code"] == "memory_saved"
    memory = result["memory"]
    assert (memory["text"], memory["kind"], memory["importance"]) == ("Likes green tea", "preference", 4)
    assert memory["origin"] == "inferred"
    assert memory["sources"] == [{"kind": "tool", "ref": "remember"}]
    assert result["replaced_id"] is None and result["reinforced"] is False
    assert result["undo"] == {"id": memory["id"]}
    assert "message" not in result
    assert service.get(place, memory["id"]).text == "Likes green tea"
    json.dumps(result)


def test_the_remember_undo_token_really_removes_the_memory(service, place):
    result = run_tool(service, place, "remember", {"text": "Is learning Portuguese"})
    undone = service.undo(place, result["undo"]["id"])
    assert undone.ok and undone.memory is None
    with pytest.raises(NotFound):
        service.get(place, result["memory"]["id"])
    assert service.list(place).items == []


@pytest.mark.parametrize("importance, kept", [("4", 4), (4.6, 5), ("high", 4), (" LOW ", 2), (0, 1), (-3, 1), (9, 5), (None, 3)])
def test_remember_reads_importance_as_models_send_it(service, place, importance, kept):
    result = run_tool(service, place, "remember", {"text": "Plays the cello", "importance": importance})
    assert result["ok"] and result["memory"]["importance"] == kept


@pytest.mark.parametrize(
    "importance, kept",
    [(10**400, 5), (-(10**400), 1), (10**20, 5), (1e308, 5), (-1e308, 1), (math.inf, 5), (-math.inf, 1), (math.nan, 3),
     ("1e999", 5), ("9" * 5000, 5)],
)
def test_remember_survives_huge_importances(service, place, importance, kept):
    result = run_tool(service, place, "remember", {"text": "Runs every morning", "importance": importance})
    assert result["ok"] and result["memory"]["importance"] == kept


def test_remember_a_duplicate_replaces_it_and_undo_brings_the_old_wording_back(service, place):
    first = remember_ok(service, place, "Lives in Lyon")
    result = run_tool(service, place, "remember", {"text": "lives in LYON"})
    assert result["ok"] and result["replaced_id"] == first.id
    assert result["memory"]["id"] == first.id and result["memory"]["revision"] == 2
    assert result["undo"] == {"id": first.id}
    # a model's write never relabels what the person asserted
    assert result["memory"]["origin"] == "asserted"
    undone = service.undo(place, result["undo"]["id"])
    assert undone.ok and undone.memory is not None and undone.memory.text == "Lives in Lyon"


def test_remember_a_reinforced_duplicate_has_nothing_to_undo(make_service, place):
    service = make_service(options=Options(on_duplicate="reinforce"))
    first = run_tool(service, place, "remember", {"text": "Likes jazz", "importance": 2})
    again = run_tool(service, place, "remember", {"text": "likes jazz", "importance": 5})
    assert again["ok"] and again["reinforced"] is True
    assert again["undo"] is None
    assert again["memory"]["id"] == first["memory"]["id"]
    assert again["memory"]["importance"] == 5
    assert [m.text for m in service.list(place).items] == ["Likes jazz"]


def test_remember_passes_role_explicit_and_person_name(make_service, place):
    rule = pattern_rule("health_data", [r"\bdiabet"], allow_when_explicit=True)
    service = make_service(options=Options(rules=[rule]), names_of=lambda p: ["Marie Curie", "Paul"])
    _refused(run_tool(service, place, "remember", {"text": "Has diabetes"}), "health_data")
    assert run_tool(service, place, "remember", {"text": "Has diabetes"}, explicit=True)["ok"]
    # only a real True counts as explicit: the host's "false" string is not a yes
    _refused(run_tool(service, place, "remember", {"text": "Is diabetic"}, explicit="false"), "health_data")  # type: ignore[arg-type]
    _refused(run_tool(service, place, "remember", {"text": "Paul likes chess"}), "other_person")
    assert run_tool(service, place, "remember", {"text": "Paul likes chess"}, person_name="Paul")["ok"]


def test_remember_arguments_as_the_json_text_of_an_openai_call(service, place):
    result = run_tool(service, place, "remember", '{"text": "Drinks oat milk", "kind": "preference"}')
    assert result["ok"] and result["memory"]["kind"] == "preference"
    assert run_tool(service, place, "recall", b'{"query": "oat milk"}')["memories"][0]["text"] == "Drinks oat milk"


def test_extra_arguments_are_ignored(service, place):
    result = run_tool(service, place, "remember", {"text": "Owns a bike", "mood": "happy", "id": "forged"})
    assert result["ok"] and result["memory"]["id"] != "forged"


# ================================================================== recall


@pytest.fixture
def stocked(service, place):
    remember_ok(service, place, "Has a dog named Rex", kind="fact", importance=4)
    remember_ok(service, place, "Wants to run a marathon", kind="goal")
    remember_ok(service, place, "Prefers tea to coffee", kind="preference")
    return service


def test_recall_finds_memories_by_meaning_and_words(stocked, place):
    result = run_tool(stocked, place, "recall", {"query": "puppy"})
    assert result["ok"] is True and result["code"] == "memories_found"
    assert result["memories"][0]["text"] == "Has a dog named Rex"
    top = result["memories"][0]
    assert set(top) == {"id", "text", "kind", "importance", "score", "match"}
    assert (top["kind"], top["importance"]) == ("fact", 4)
    assert isinstance(top["score"], float) and top["match"] in ("vector", "lexical", "hybrid")
    assert "undo" not in result
    json.dumps(result)


def test_recall_marks_what_it_returns_as_used(stocked, place):
    result = run_tool(stocked, place, "recall", {"query": "marathon"})
    assert stocked.get(place, result["memories"][0]["id"]).last_used_at is not None


@pytest.mark.parametrize("kinds", [["goal"], "goal", ["GOAL"], [" Goal "], ["goal", "goal"]])
def test_recall_narrows_to_kinds(stocked, place, kinds):
    result = run_tool(stocked, place, "recall", {"query": "dog marathon tea", "kinds": kinds})
    assert [m["kind"] for m in result["memories"]] == ["goal"]


def test_recall_kinds_follow_aliases(make_service, place):
    service = make_service(options=Options(kinds=Kinds(aliases={"objectif": "goal"})))
    remember_ok(service, place, "Wants to learn piano", kind="goal")
    remember_ok(service, place, "Likes piano music", kind="preference")
    result = run_tool(service, place, "recall", {"query": "piano", "kinds": ["Objectif"]})
    assert [m["text"] for m in result["memories"]] == ["Wants to learn piano"]


@pytest.mark.parametrize("kinds", [["hobby"], ["goal", "hobby"], "nonsense"])
def test_recall_with_an_unknown_kind_is_refused_not_widened(stocked, place, kinds):
    _refused(run_tool(stocked, place, "recall", {"query": "dog", "kinds": kinds}), "invalid_kind")


@pytest.mark.parametrize("kinds", [[], None])
def test_recall_with_no_kinds_searches_them_all(stocked, place, kinds):
    result = run_tool(stocked, place, "recall", {"query": "dog marathon tea", "kinds": kinds})
    assert len(result["memories"]) == 3


@pytest.mark.parametrize(
    "limit, most",
    [(None, 5), (1, 1), (3, 3), ("3", 3), (" 2 ", 2), (4.0, 4), (20, 20), (21, 20), (10**400, 20), (0, 1), (-5, 1),
     (-(10**400), 1)],
)
def test_recall_limit_is_clamped_to_1_20(words_only, place, limit, most):
    for i in range(25):
        remember_ok(words_only, place, f"Visited city number {i} with friends")
    args = {"query": "city friends"} if limit is None else {"query": "city friends", "limit": limit}
    result = run_tool(words_only, place, "recall", args)
    assert result["ok"] and len(result["memories"]) == most


@pytest.mark.parametrize("query", ["", "   ", "zzzz"])
def test_recall_with_nothing_to_find_answers_an_empty_list(words_only, place, query):
    remember_ok(words_only, place, "Has a dog named Rex")
    result = run_tool(words_only, place, "recall", {"query": query}, language="en")
    assert result == {"ok": True, "code": "memories_found", "memories": [], "message": "No memories found."}


def test_recall_masks_text_on_its_way_to_the_model(make_service, place):
    service = make_service(mask="pii")
    remember_ok(service, place, "Email is ana@example.org")
    result = run_tool(service, place, "recall", {"query": "email"})
    assert result["memories"][0]["text"] == "Email is [email]"


# ================================================================== update_memory


def test_update_memory_corrects_with_a_new_revision_and_an_undo_token(service, place):
    saved = run_tool(service, place, "remember", {"text": "Lives in Lyon", "kind": "fact", "importance": 2})
    memory_id = saved["memory"]["id"]
    result = run_tool(service, place, "update_memory", {"id": memory_id, "text": "Lives in Marseille"})
    assert result["ok"] is True and result["code"] == "memory_corrected"
    memory = result["memory"]
    assert (memory["id"], memory["revision"], memory["text"]) == (memory_id, 2, "Lives in Marseille")
    assert (memory["kind"], memory["importance"]) == ("fact", 2)
    assert {"kind": "tool", "ref": "update_memory"} in memory["sources"]
    assert result["undo"] == {"id": memory_id}
    undone = service.undo(place, result["undo"]["id"])
    assert undone.ok and undone.memory is not None and undone.memory.text == "Lives in Lyon"
    assert service.get(place, memory_id).text == "Lives in Lyon"


def test_update_memory_changes_kind_and_importance_when_given(service, place):
    memory = remember_ok(service, place, "Run a marathon", kind="fact")
    arguments = {"id": memory.id, "text": "Run a marathon", "kind": "goal", "importance": "5"}
    result = run_tool(service, place, "update_memory", arguments)
    assert result["ok"] and (result["memory"]["kind"], result["memory"]["importance"]) == ("goal", 5)


def test_update_memory_keeps_an_asserted_memorys_provenance(service, place):
    memory = remember_ok(service, place, "Works as a nurse", sources=())
    result = run_tool(service, place, "update_memory", {"id": memory.id, "text": "Works as a head nurse"})
    assert result["ok"] and result["memory"]["origin"] == "asserted" and result["memory"]["sources"] == []


def test_update_memory_that_changes_nothing_has_nothing_to_undo(service, place):
    memory = remember_ok(service, place, "Likes chess")
    result = run_tool(service, place, "update_memory", {"id": memory.id, "text": "Likes chess"})
    assert result["ok"] and result["undo"] is None and result["memory"]["revision"] == 1
    # the memory just created is not taken back by a token that should not exist
    assert service.get(place, memory.id).text == "Likes chess"


def test_update_memory_checks_the_rules_again(make_service, place):
    service = make_service(names_of=lambda p: ["Paul"])
    memory = remember_ok(service, place, "Likes chess")
    _refused(run_tool(service, place, "update_memory", {"id": memory.id, "text": "Likes chess with Paul"}), "other_person")
    _refused(run_tool(service, place, "update_memory", {"id": memory.id, "text": "   "}), "empty")
    _refused(run_tool(service, place, "update_memory", {"id": memory.id, "text": "x" * 501}), "too_long")
    assert service.get(place, memory.id).text == "Likes chess"
    allowed = run_tool(service, place, "update_memory", {"id": memory.id, "text": "Likes chess with Paul"}, person_name="Paul")
    assert allowed["ok"]


@pytest.mark.parametrize("memory_id", ["nope", "0" * 32, "x" * 5000, " nope "])
def test_update_memory_of_an_unknown_id_is_not_found(service, place, memory_id):
    _refused(run_tool(service, place, "update_memory", {"id": memory_id, "text": "Anything"}), "not_found")


def test_update_memory_is_refused_while_paused(service, place):
    """A paused person's memories change only by their own hand, never by the model's."""
    memory = remember_ok(service, place, "Likes chess")
    service.pause(place)
    result = run_tool(service, place, "update_memory", {"id": memory.id, "text": "Likes go"}, language="en")
    assert (result["ok"], result["reason"]) == (False, "paused")
    assert result["message"] == "Memory is paused: nothing is learnt or changed until you resume it."
    assert service.get(place, memory.id).text == "Likes chess"


# ================================================================== forget


def test_forget_erases_for_good_with_no_undo(service, place):
    memory = remember_ok(service, place, "Has a cat")
    run_tool(service, place, "update_memory", {"id": memory.id, "text": "Has two cats"})
    result = run_tool(service, place, "forget", {"id": memory.id})
    assert result == {"ok": True, "code": "memory_forgotten", "id": memory.id, "undo": None}
    with pytest.raises(NotFound):
        service.get(place, memory.id)
    assert service.list(place, state="all").items == []
    _refused(run_tool(service, place, "forget", {"id": memory.id}), "not_found")
    with refused("not_found"):
        service.undo(place, memory.id)


def test_forget_an_unknown_id_is_not_found(service, place):
    _refused(run_tool(service, place, "forget", {"id": "missing"}), "not_found")


def test_forget_trims_spaces_around_the_id(service, place):
    memory = remember_ok(service, place, "Has a cat")
    assert run_tool(service, place, "forget", {"id": f"  {memory.id}\n"})["ok"]


# ================================================================== refusals


def test_remember_refusals_carry_the_services_codes(make_service, place):
    service = make_service(
        options=Options(
            kinds=Kinds(default=None, role_kinds={"child": ["goal"]}),
            rules=[pattern_rule("bank_details", [r"\biban\b"])],
        ),
        names_of=lambda p: ["Paul"],
    )
    _refused(run_tool(service, place, "remember", {"text": ""}), "empty")
    _refused(run_tool(service, place, "remember", {"text": "** **"}), "empty")
    _refused(run_tool(service, place, "remember", {"text": "a" * 501}), "too_long")
    _refused(run_tool(service, place, "remember", {"text": "Plays chess", "kind": "hobby"}), "invalid_kind")
    _refused(run_tool(service, place, "remember", {"text": "Plays chess", "kind": "fact"}, role="child"), "kind_not_allowed")
    _refused(run_tool(service, place, "remember", {"text": "Meets Paul on Fridays", "kind": "fact"}), "other_person")
    _refused(run_tool(service, place, "remember", {"text": "IBAN is FR76 3000", "kind": "fact"}), "bank_details")
    assert service.list(place, state="all").items == []
    assert run_tool(service, place, "remember", {"text": "Plays chess", "kind": "goal"}, role="child")["ok"]


def test_remember_while_paused_is_refused_and_learns_nothing(service, place):
    service.pause(place)
    _refused(run_tool(service, place, "remember", {"text": "Likes tea"}), "paused")
    assert service.list(place).items == []
    service.resume(place)
    assert run_tool(service, place, "remember", {"text": "Likes tea"})["ok"]


# ================================================================== bad arguments

BAD_SHAPES = [None, [], [{"text": "Likes tea"}], "Likes tea", "", "not json {", "[1, 2]", '"a string"', "null", "42",
              42, 3.5, True, b"\xff\xfe", set(), ("text", "Likes tea"), object()]


@pytest.mark.parametrize("name", TOOL_NAMES)
@pytest.mark.parametrize("arguments", BAD_SHAPES, ids=repr)
def test_arguments_that_are_not_an_object_are_invalid(service, place, name, arguments):
    _refused(run_tool(service, place, name, arguments), "invalid_arguments")
    assert service.list(place, state="all").items == []


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_missing_required_arguments_are_invalid(service, place, name):
    _refused(run_tool(service, place, name, {}), "invalid_arguments")
    _refused(run_tool(service, place, name, "{}"), "invalid_arguments")


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("remember", {"text": None}),
        ("remember", {"text": 5}),
        ("remember", {"text": ["Likes tea"]}),
        ("remember", {"text": {"value": "Likes tea"}}),
        ("remember", {"text": True}),
        ("remember", {"Text": "Likes tea"}),
        ("remember", {"text": "Likes tea", "kind": 5}),
        ("remember", {"text": "Likes tea", "kind": ["fact"]}),
        ("remember", {"text": "Likes tea", "kind": True}),
        ("remember", {"text": "Likes tea", "importance": [4]}),
        ("remember", {"text": "Likes tea", "importance": {"level": 4}}),
        ("remember", {"text": "Likes tea", "importance": True}),
        ("recall", {"query": None}),
        ("recall", {"query": 5}),
        ("recall", {"query": ["tea"]}),
        ("recall", {"q": "tea"}),
        ("recall", {"query": "tea", "kinds": 5}),
        ("recall", {"query": "tea", "kinds": [1]}),
        ("recall", {"query": "tea", "kinds": [None]}),
        ("recall", {"query": "tea", "kinds": {"goal": True}}),
        ("recall", {"query": "tea", "limit": "ten"}),
        ("recall", {"query": "tea", "limit": "1e3"}),
        ("recall", {"query": "tea", "limit": "9" * 5000}),
        ("recall", {"query": "tea", "limit": 2.5}),
        ("recall", {"query": "tea", "limit": math.nan}),
        ("recall", {"query": "tea", "limit": math.inf}),
        ("recall", {"query": "tea", "limit": True}),
        ("recall", {"query": "tea", "limit": [5]}),
        ("update_memory", {"id": "m1"}),
        ("update_memory", {"text": "Likes tea"}),
        ("update_memory", {"id": 1, "text": "Likes tea"}),
        ("update_memory", {"id": None, "text": "Likes tea"}),
        ("update_memory", {"id": "", "text": "Likes tea"}),
        ("update_memory", {"id": "   ", "text": "Likes tea"}),
        ("update_memory", {"id": ["m1"], "text": "Likes tea"}),
        ("update_memory", {"id": "m1", "text": 3}),
        ("update_memory", {"id": "m1", "text": "Likes tea", "kind": 3}),
        ("update_memory", {"id": "m1", "text": "Likes tea", "importance": [1]}),
        ("forget", {"id": 10**400}),
        ("forget", {"id": 1.5}),
        ("forget", {"id": None}),
        ("forget", {"id": ""}),
        ("forget", {"id": {"id": "m1"}}),
        ("forget", {"ids": ["m1"]}),
    ],
)
def test_arguments_of_the_wrong_type_are_invalid(service, place, name, arguments):
    _refused(run_tool(service, place, name, arguments), "invalid_arguments")
    assert service.list(place, state="all").items == []


def test_deeply_nested_json_text_is_invalid_not_a_crash(service, place):
    _refused(run_tool(service, place, "remember", "[" * 200_000), "invalid_arguments")
    _refused(run_tool(service, place, "remember", '{"text": ' + "[" * 200_000), "invalid_arguments")


def test_a_role_or_person_name_that_is_not_a_string_is_invalid(service, place):
    # silently dropping a role would lift the role's restrictions
    _refused(run_tool(service, place, "remember", {"text": "Likes tea"}, role=["child"]), "invalid_arguments")  # type: ignore[arg-type]
    _refused(run_tool(service, place, "remember", {"text": "Likes tea"}, person_name=5), "invalid_arguments")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["delete_everything", "Remember", "remember ", "", None, 5, ["remember"], "portrait", "undo"])
def test_an_unknown_tool_is_refused(service, place, name):
    _refused(run_tool(service, place, name, {"text": "Likes tea"}), "unknown_tool")
    assert service.list(place, state="all").items == []


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
_keys = st.sampled_from(["text", "kind", "importance", "query", "kinds", "limit", "id"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(TOOL_NAMES),
    arguments=_json | st.dictionaries(_keys, _json, max_size=5) | st.text(max_size=60),
    language=st.sampled_from([None, "en", "fr", "fr-FR", "de"]),
)
def test_no_argument_whatsoever_makes_a_tool_raise(name, arguments, language):
    service = MemoryService(InMemoryStore(), embedder=HashEmbedder(), clock=FakeClock())
    place = Place("fuzz", "t")
    remember_ok(service, place, "Likes tea")
    result = run_tool(service, place, name, arguments, language=language)
    assert isinstance(result, dict) and result["ok"] in (True, False)
    assert result["code"] in ("memory_saved", "memories_found", "memory_corrected", "memory_forgotten", "refused")
    if not result["ok"]:
        assert isinstance(result["reason"], str) and result["reason"]
    json.dumps(result, allow_nan=False)


# ================================================================== AI switched off


def test_with_the_ai_off_every_tool_answers_ai_disabled(make_service, place):
    service = make_service(ai_enabled=lambda p: p.scope != place.scope)
    memory = remember_ok(service, place, "Likes tea")
    for name, arguments in [
        ("remember", {"text": "Likes coffee"}),
        ("recall", {"query": "tea"}),
        ("update_memory", {"id": memory.id, "text": "Likes green tea"}),
        ("forget", {"id": memory.id}),
        ("remember", None),
    ]:
        _refused(run_tool(service, place, name, arguments), "ai_disabled")
    assert [m.text for m in service.list(place).items] == ["Likes tea"]
    assert service.get(place, memory.id).last_used_at is None
    # the person's own operations still work
    assert service.forget(place, memory.id) == 1
    # another tenant with the AI on is unaffected
    elsewhere = Place(place.owner_id, "tenant-with-ai")
    assert run_tool(service, elsewhere, "remember", {"text": "Likes coffee"})["ok"]


def test_an_unknown_tool_is_unknown_even_with_the_ai_off(make_service, place):
    service = make_service(ai_enabled=lambda p: False)
    _refused(run_tool(service, place, "nope", {}), "unknown_tool")


# ================================================================== messages


@pytest.mark.parametrize("language, lang", [("en", "en"), ("fr", "fr"), ("fr-FR", "fr"), ("en_GB", "en")])
def test_every_outcome_has_a_message_in_the_asked_language(service, place, language, lang):
    saved = run_tool(service, place, "remember", {"text": "Likes tea"}, language=language)
    assert saved["message"] == message("memory_saved", lang)
    found = run_tool(service, place, "recall", {"query": "tea"}, language=language)
    assert found["message"] == message("memories_found", lang, count=1)
    correction = {"id": saved["memory"]["id"], "text": "Likes mint tea"}
    corrected = run_tool(service, place, "update_memory", correction, language=language)
    assert corrected["message"] == message("memory_corrected", lang)
    forgotten = run_tool(service, place, "forget", {"id": saved["memory"]["id"]}, language=language)
    assert forgotten["message"] == message("memory_forgotten", lang)


def test_messages_in_english_and_french(service, place):
    remember_ok(service, place, "Likes tea")
    remember_ok(service, place, "Likes green tea a lot")
    assert run_tool(service, place, "recall", {"query": "tea"}, language="en")["message"] == "Found 2 memories."
    assert run_tool(service, place, "recall", {"query": "tea"}, language="fr")["message"] == "2 souvenirs trouvés."
    assert run_tool(service, place, "remember", {"text": "Owns a bike"}, language="fr")["message"] == "Enregistré en mémoire."


@pytest.mark.parametrize("language", ["en", "fr"])
def test_refusals_carry_a_message_in_the_asked_language(make_service, place, language):
    service = make_service(options=Options(rules=[pattern_rule("health_data", [r"diabet"])]))
    service.pause(Place("paused-person", place.scope))
    cases = [
        (run_tool(service, place, "remember", {"text": ""}, language=language), "empty"),
        (run_tool(service, Place("paused-person", place.scope), "remember", {"text": "x"}, language=language), "paused"),
        (run_tool(service, place, "forget", {"id": "nope"}, language=language), "not_found"),
        (run_tool(service, place, "forget", [], language=language), "invalid_arguments"),
        (run_tool(service, place, "nope", {}, language=language), "unknown_tool"),
    ]
    for result, reason in cases:
        _refused(result, reason)
        assert result["message"] == message(f"refused.{reason}", language)
    ruled = run_tool(service, place, "remember", {"text": "Has diabetes"}, language=language)
    _refused(ruled, "health_data")
    assert ruled["message"] == message("refused", language)


def test_ai_disabled_has_a_message(make_service, place):
    service = make_service(ai_enabled=lambda p: False)
    result = run_tool(service, place, "recall", {"query": "tea"}, language="fr")
    _refused(result, "ai_disabled")
    assert result["message"] == message("refused.ai_disabled", "fr")


@pytest.mark.parametrize("language", [None, "", "de", "pt-BR", 5])
def test_no_message_without_a_language_the_catalog_speaks(service, place, language):
    assert "message" not in run_tool(service, place, "remember", {"text": "Likes tea"}, language=language)
    assert "message" not in run_tool(service, place, "forget", {"id": "nope"}, language=language)


# ================================================================== places kept apart


@pytest.mark.parametrize("other", [Place("bob", "tenant-a"), Place("alice", "tenant-b"), Place("alice", "")])
def test_tools_never_reach_another_place(service, place, other):
    mine = run_tool(service, place, "remember", {"text": "Secret plan to learn the banjo"})["memory"]
    found = run_tool(service, other, "recall", {"query": "banjo plan"})
    assert found["ok"] and found["memories"] == []
    _refused(run_tool(service, other, "update_memory", {"id": mine["id"], "text": "Hijacked"}), "not_found")
    _refused(run_tool(service, other, "forget", {"id": mine["id"]}), "not_found")
    kept = service.get(place, mine["id"])
    assert (kept.text, kept.revision) == ("Secret plan to learn the banjo", 1)
    # a duplicate said elsewhere is a new memory there, never a replacement of this one
    theirs = run_tool(service, other, "remember", {"text": "Secret plan to learn the banjo"})
    assert theirs["ok"] and theirs["replaced_id"] is None and theirs["memory"]["id"] != mine["id"]


def test_the_place_may_be_a_pair_but_never_missing(service):
    assert run_tool(service, ("alice", "t"), "remember", {"text": "Likes tea"})["ok"]
    for bad in (None, "", ("", "t"), 5):
        with pytest.raises(InvalidWhere):
            run_tool(service, bad, "remember", {"text": "Likes tea"})
