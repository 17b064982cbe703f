"""Reading a consolidation answer the way models really send it (DESIGN §7): fences, prose around
the JSON, raw line breaks, trailing commas, renamed keys, bare lists, and answers cut half way.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from portal.domain.extraction import Extraction, ProposedCorrection, ProposedFact, read_extraction

MODEST = settings(max_examples=200, deadline=None)


def texts(extraction: Extraction | None) -> list[str]:
    assert extraction is not None
    return [fact.text for fact in extraction.facts]


# --- what models wrap around the JSON -----------------------------------------------------------


def test_a_json_fence_between_two_sentences():
    answer = (
        "Sure! Here is what I found:\n"
        "```json\n"
        '{"facts": [{"text": "Runs a small pottery studio", "kind": "work", "importance": 0.7}],\n'
        ' "corrections": [], "summary": "Talked about opening hours."}\n'
        "```\n"
        "Let me know if you need anything else."
    )
    extraction = read_extraction(answer)
    assert extraction == Extraction(
        facts=(ProposedFact("Runs a small pottery studio", "work", 0.7),),
        corrections=(),
        summary="Talked about opening hours.",
        cut=False,
    )


def test_a_fence_without_a_language():
    answer = '```\n{"facts": ["Cycles to work every day"]}\n```'
    assert texts(read_extraction(answer)) == ["Cycles to work every day"]


def test_a_sentence_before_and_after_without_a_fence():
    answer = 'Based on the conversation: {"facts": [{"text": "Has two cats"}]} Hope this helps!'
    assert texts(read_extraction(answer)) == ["Has two cats"]


def test_brackets_in_the_prose_do_not_hide_the_answer():
    answer = 'I found [2] facts (see [below]):\n{"facts": ["Speaks Portuguese", "Lives near the harbour"]}'
    assert texts(read_extraction(answer)) == ["Speaks Portuguese", "Lives near the harbour"]


def test_an_example_fence_before_the_real_answer_is_skipped():
    answer = 'The format is:\n```\n{"note": 1}\n```\nAnd the answer:\n```json\n{"facts": ["Plays the cello"]}\n```'
    assert texts(read_extraction(answer)) == ["Plays the cello"]


def test_bytes_are_read_as_utf8():
    assert texts(read_extraction('{"facts": ["Grew up in Zürich"]}'.encode())) == ["Grew up in Zürich"]


def test_an_already_decoded_answer_is_read_too():
    assert texts(read_extraction({"memories": ["Prefers trains to planes"]})) == ["Prefers trains to planes"]


# --- sloppy JSON ----------------------------------------------------------------------------------


def test_raw_line_breaks_and_tabs_inside_strings():
    answer = '{"facts": [{"text": "Allergic to\n\tpeanuts", "kind": "health"}], "summary": "Menu\nplanning"}'
    extraction = read_extraction(answer)
    assert texts(extraction) == ["Allergic to\n\tpeanuts"]
    assert extraction is not None and extraction.summary == "Menu\nplanning"


def test_trailing_commas_in_objects_and_lists():
    answer = '{"facts": [{"text": "Volunteers at the library", "importance": 3,}, "Reads crime novels",], "summary": "x",}'
    extraction = read_extraction(answer)
    assert extraction == Extraction(
        facts=(ProposedFact("Volunteers at the library", importance=3), ProposedFact("Reads crime novels")),
        corrections=(),
        summary="x",
        cut=False,
    )


def test_unicode_escapes_including_astral_characters():
    answer = json.dumps({"facts": ["Loves 🎻 and café"]})  # ensure_ascii: a surrogate pair
    assert "\\ud83c" in answer
    assert texts(read_extraction(answer)) == ["Loves 🎻 and café"]


def test_a_lone_surrogate_escape_becomes_a_replacement_character():
    # A lone half of a pair cannot be encoded as UTF-8, so it could never be stored.
    assert texts(read_extraction(r'["Likes \ud83c music"]')) == ["Likes \ufffd music"]


def test_an_absurdly_long_importance_does_not_make_the_answer_unreadable():
    extraction = read_extraction('{"facts": [{"text": "Swims", "importance": ' + "9" * 5000 + "}]}")
    assert extraction is not None and extraction.facts == (ProposedFact("Swims", importance=float("inf")),)


def test_an_unknown_escape_keeps_its_backslash():
    assert texts(read_extraction(r'["Keeps notes in C:\Users\Dana"]')) == [r"Keeps notes in C:\Users\Dana"]


# --- other shapes and key names ---------------------------------------------------------------------


def test_a_bare_list_of_fact_objects():
    answer = '[{"text": "Coaches a youth football team"}, {"text": "Works night shifts"}]'
    extraction = read_extraction(answer)
    assert texts(extraction) == ["Coaches a youth football team", "Works night shifts"]
    assert extraction is not None and extraction.corrections == () and extraction.summary is None


def test_a_bare_list_of_strings():
    assert texts(read_extraction('["Is learning Japanese", "Owns an e-bike"]')) == ["Is learning Japanese", "Owns an e-bike"]


@pytest.mark.parametrize("key", ["facts", "memories", "new_facts"])
def test_facts_under_any_of_their_names(key):
    assert texts(read_extraction(json.dumps({key: ["Drinks oat milk"]}))) == ["Drinks oat milk"]


@pytest.mark.parametrize("key", ["text", "fact", "memory", "content"])
def test_a_facts_text_under_any_of_its_names(key):
    assert texts(read_extraction(json.dumps({"facts": [{key: "Bakes sourdough"}]}))) == ["Bakes sourdough"]


@pytest.mark.parametrize("kind_key", ["kind", "type", "category"])
@pytest.mark.parametrize("importance_key", ["importance", "priority"])
def test_kind_and_importance_under_any_of_their_names(kind_key, importance_key):
    answer = json.dumps({"facts": [{"fact": "Is vegetarian", kind_key: "diet", importance_key: "high"}]})
    extraction = read_extraction(answer)
    assert extraction is not None
    assert extraction.facts == (ProposedFact("Is vegetarian", "diet", "high"),)


@pytest.mark.parametrize("key", ["corrections", "updates"])
@pytest.mark.parametrize("id_key", ["id", "memory_id"])
def test_corrections_under_any_of_their_names(key, id_key):
    answer = json.dumps(
        {"facts": [], key: [{id_key: "mem_41", "content": "Moved to Porto in 2024", "category": "home", "priority": 4}]}
    )
    extraction = read_extraction(answer)
    assert extraction is not None
    assert extraction.corrections == (ProposedCorrection("mem_41", "Moved to Porto in 2024", "home", 4),)


def test_a_correction_without_an_id_is_dropped_and_blank_text_means_unchanged():
    answer = '{"updates": [{"text": "No id here"}, {"id": "  "}, {"memory_id": 17, "text": " ", "importance": 2}]}'
    extraction = read_extraction(answer)
    assert extraction is not None
    assert extraction.corrections == (ProposedCorrection("17", None, None, 2),)


def test_cited_messages_as_numbers_or_tags():
    answer = json.dumps(
        {
            "facts": [
                {"text": "Has a daughter named Ines", "sources": [2, "m5", "s5", "#7"]},
                {"text": "Is training for a half marathon", "evidence": "m3"},
                {"text": "Studies law", "messages": [True, -1, "see above", 4]},
            ]
        }
    )
    extraction = read_extraction(answer)
    assert extraction is not None
    assert [fact.messages for fact in extraction.facts] == [(2, 5, 7), (3,), (4,)]


def test_facts_without_usable_text_are_dropped():
    answer = '{"facts": ["", "   ", {"text": "\\n\\t"}, {"text": 42}, {"kind": "x"}, 7, null, ["nested"], "Keeps bees"]}'
    assert texts(read_extraction(answer)) == ["Keeps bees"]


def test_an_empty_answer_object_is_read_as_nothing_to_keep():
    assert read_extraction('{"facts": [], "corrections": [], "summary": ""}') == Extraction((), (), None, False)
    assert read_extraction("{}") == Extraction((), (), None, False)


@pytest.mark.parametrize("answer", [None, 42, 3.5, True, "", "   ", "I could not find anything worth remembering.", "{not json}"])
def test_nothing_json_ish_reads_as_none(answer):
    assert read_extraction(answer) is None


@pytest.mark.parametrize("answer", ["[" * 5000, '{"facts": ' * 5000])
def test_absurd_nesting_neither_raises_nor_yields_facts(answer):
    extraction = read_extraction(answer)
    assert extraction is None or extraction.facts == ()


# --- answers cut half way ------------------------------------------------------------------------


def test_a_cut_answer_keeps_the_whole_facts_before_the_cut():
    answer = (
        "```json\n"
        '{"summary": "Planning a trip.", "facts": [\n'
        '  {"text": "Is afraid of flying", "kind": "health"},\n'
        '  {"text": "Visits her sister in Gdańsk every summer", "kind": "family"},\n'
        '  {"text": "Wants to learn to sa'
    )
    extraction = read_extraction(answer)
    assert extraction is not None and extraction.cut
    assert texts(extraction) == ["Is afraid of flying", "Visits her sister in Gdańsk every summer"]
    assert extraction.summary == "Planning a trip."


def test_a_cut_list_of_strings_drops_the_half_written_one():
    extraction = read_extraction('{"facts": ["Works in logistics", "Supports Benfi')
    assert extraction is not None and extraction.cut
    assert texts(extraction) == ["Works in logistics"]


def test_a_summary_cut_half_way_is_dropped():
    extraction = read_extraction('{"facts": ["Sings in a choir"], "summary": "We talked ab')
    assert extraction is not None and extraction.cut
    assert texts(extraction) == ["Sings in a choir"] and extraction.summary is None


def test_a_closing_fence_ends_a_cut_answer():
    answer = '```json\n{"facts": [{"text": "Rents a flat"}, {"text": "Has a garden\n```\nAnything else?'
    extraction = read_extraction(answer)
    assert extraction is not None and extraction.cut
    assert texts(extraction) == ["Rents a flat"]


@pytest.mark.parametrize(
    "answer",
    [
        '{"facts": [{"text": "Rents a flat", "sources": ["m1"]} "Has a "broken" quote"]}',
        'Here: {"facts": ["Rents a flat", {"text": "Says "hi" a lot"}]}',
    ],
)
def test_broken_json_is_unreadable_rather_than_misread(answer):
    assert read_extraction(answer) is None


def test_every_cut_of_a_realistic_answer_keeps_exactly_the_whole_facts():
    facts = [
        {"text": "Teaches chemistry at a secondary school", "kind": "work", "importance": 0.8},
        {"text": "Has a dog called Pepper", "kind": "pets", "importance": 0.5},
        {"text": "Is lactose intolerant", "kind": "health", "importance": 0.9},
    ]
    answer = json.dumps({"facts": facts, "corrections": [{"id": "m1", "text": "Lives in Leeds"}], "summary": "Chat."}, indent=2)
    ends = fact_ends(answer)
    for cut in range(len(answer) + 1):
        extraction = read_extraction(answer[:cut])
        kept = [f["text"] for f, end in zip(facts, ends, strict=True) if end <= cut]
        assert (texts(extraction) if extraction else []) == kept, cut


# --- properties ------------------------------------------------------------------------------------


def fact_ends(answer: str) -> list[int]:
    """Where each fact object of a `json.dumps`ed answer ends, found with the standard decoder."""
    decoder = json.JSONDecoder()
    pos = answer.index("[", answer.index('"facts"')) + 1
    ends: list[int] = []
    while True:
        while answer[pos] in " \n,":
            pos += 1
        if answer[pos] == "]":
            return ends
        _, pos = decoder.raw_decode(answer, pos)
        ends.append(pos)


facts_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "text": st.text(),
            "kind": st.one_of(st.none(), st.text(max_size=10)),
            "importance": st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False)),
        }
    ),
    max_size=5,
)
corrections_strategy = st.lists(st.fixed_dictionaries({"id": st.text(min_size=1, max_size=8), "text": st.text()}), max_size=2)


@st.composite
def answers(draw: st.DrawFn) -> tuple[str, list[dict]]:
    facts = draw(facts_strategy)
    document = {"facts": facts, "corrections": draw(corrections_strategy), "summary": draw(st.text())}
    answer = json.dumps(document, indent=draw(st.sampled_from([None, 2])), ensure_ascii=draw(st.booleans()))
    return answer, facts


def expected(facts: list[dict]) -> list[ProposedFact]:
    return [ProposedFact(f["text"], f["kind"], f["importance"]) for f in facts if f["text"].strip()]


@MODEST
@given(st.text())
def test_any_text_is_read_without_raising(text):
    assert read_extraction(text) is None or isinstance(read_extraction(text), Extraction)


@MODEST
@given(st.binary())
def test_any_bytes_are_read_without_raising(data):
    assert read_extraction(data) is None or isinstance(read_extraction(data), Extraction)


@MODEST
@given(answers(), st.data())
def test_cut_and_mutated_answers_are_read_without_raising(answer_and_facts, data):
    answer, _ = answer_and_facts
    for _ in range(data.draw(st.integers(0, 4))):
        pos = data.draw(st.integers(0, len(answer)))
        if data.draw(st.booleans()):
            answer = answer[:pos] + data.draw(st.sampled_from(list('{}[],:"\\\n\t`') + ["```json\n", "\\u"])) + answer[pos:]
        else:
            answer = answer[:pos] + answer[pos + data.draw(st.integers(1, 5)) :]
    answer = answer[: data.draw(st.integers(0, len(answer)))]
    extraction = read_extraction(answer)
    assert extraction is None or all(fact.text.strip() for fact in extraction.facts)


@MODEST
@given(answers())
def test_a_whole_answer_gives_every_fact(answer_and_facts):
    answer, facts = answer_and_facts
    extraction = read_extraction(answer)
    assert extraction is not None and not extraction.cut
    assert list(extraction.facts) == expected(facts)


@MODEST
@given(answers(), st.data())
def test_a_cut_anywhere_keeps_the_facts_that_ended_before_it_and_invents_none(answer_and_facts, data):
    answer, facts = answer_and_facts
    cut = data.draw(st.integers(0, len(answer) - 1))
    extraction = read_extraction(answer[:cut])
    whole = [fact for fact, end in zip(facts, fact_ends(answer), strict=True) if end <= cut]
    if cut == 0:
        assert extraction is None
        return
    assert extraction is not None and extraction.cut
    assert list(extraction.facts) == expected(whole)
