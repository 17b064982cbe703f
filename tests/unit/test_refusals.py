"""Writing refusals (DESIGN §3): codes, never sentences, and a refusal changes nothing."""

from __future__ import annotations

import pytest

from portal.domain.options import Options
from portal.domain.rules import Kinds, load_rules, pattern_rule
from portal.domain.types import Refused

from ..expect import refused
from .conftest import active_texts, remember_ok


def _refused(result, code):
    assert isinstance(result, Refused), f"expected refusal {code!r}, got {result}"
    assert result.ok is False
    assert result.code == code


# ------------------------------------------------------------------ empty and too long


@pytest.mark.parametrize("text", ["", "   ", "\n\t  \n", None, 42, "** **", "``", "#  "])
def test_empty_text_is_refused_and_nothing_is_kept(service, place, text):
    with refused("empty"):
        service.remember(place, text)
    assert service.list(place, state="all").items == []


def test_501_characters_is_too_long_500_is_kept(service, place):
    with refused("too_long"):
        service.remember(place, "a" * 501)
    assert service.list(place).items == []
    kept = remember_ok(service, place, "b" * 500)
    assert len(kept.text) == 500


def test_the_length_limit_is_configurable(make_service, place):
    service = make_service(options=Options(max_text_length=10))
    with refused("too_long"):
        service.remember(place, "eleven char")
    assert remember_ok(service, place, "ten chars!").text == "ten chars!"


def test_update_to_empty_or_too_long_is_refused_and_keeps_the_text(service, place):
    memory = remember_ok(service, place, "Likes tea")
    with refused("empty"):
        service.update(place, memory.id, text="   ")
    with refused("too_long"):
        service.update(place, memory.id, text="x" * 501)
    now = service.get(place, memory.id)
    assert (now.text, now.revision) == ("Likes tea", 1)


# ------------------------------------------------------------------ kinds


def test_default_kinds_and_fallback(service, place):
    assert remember_ok(service, place, "Run a marathon", kind="goal").kind == "goal"
    assert remember_ok(service, place, "Sister is Ana", kind="Person").kind == "person"
    # an unknown kind falls back to the default kind, "fact"
    assert remember_ok(service, place, "Plays chess", kind="hobby").kind == "fact"
    assert remember_ok(service, place, "Lives in Lyon").kind == "fact"


def test_unknown_kind_without_default_is_invalid_kind(make_service, place):
    service = make_service(options=Options(kinds=Kinds(default=None)))
    with refused("invalid_kind"):
        service.remember(place, "Plays chess", kind="hobby")
    assert service.list(place).items == []
    assert remember_ok(service, place, "Plays chess", kind="fact").kind == "fact"


@pytest.mark.parametrize(
    "raw, kind",
    [("objectif", "goal"), ("Objectif", "goal"), ("OBJECTIF", "goal"), ("GOAL", "goal"), ("  Goal ", "goal"),
     ("Préférence", "preference"), ("PREFERENCE", "preference"), ("Évènement", None)],
)
def test_kind_aliases_accents_and_case(make_service, place, raw, kind):
    service = make_service(options=Options(kinds=Kinds(aliases={"objectif": "goal"}, default=None)))
    if kind is None:
        with refused("invalid_kind"):
            service.remember(place, "Learn Portuguese", kind=raw)
    else:
        assert remember_ok(service, place, "Learn Portuguese", kind=raw).kind == kind


def test_an_alias_also_works_on_update(make_service, place):
    service = make_service(options=Options(kinds=Kinds(aliases={"objectif": "goal"}, default=None)))
    memory = remember_ok(service, place, "Learn Portuguese", kind="fact")
    assert service.update(place, memory.id, kind="Objectif").memory.kind == "goal"
    with refused("invalid_kind"):
        service.update(place, memory.id, kind="hobby")
    assert service.get(place, memory.id).kind == "goal"


def test_role_kinds_refuse_a_kind_the_role_may_not_write(make_service, place):
    kinds = Kinds(role_kinds={"assistant": ["preference", "fact"]})
    service = make_service(options=Options(kinds=kinds))
    with refused("kind_not_allowed"):
        service.remember(place, "Become a pilot", kind="goal", role="assistant")
    assert service.list(place).items == []
    assert remember_ok(service, place, "Prefers short answers", kind="preference", role="assistant").kind == "preference"
    # roles without an entry, and no role at all, may write any kind
    assert remember_ok(service, place, "Become a pilot", kind="goal", role="user").kind == "goal"
    assert remember_ok(service, place, "Visit Japan", kind="goal").kind == "goal"


# ------------------------------------------------------------------ content rules


def test_pattern_rule_matches_folded_text_and_case(make_service, place):
    service = make_service(options=Options(rules=[pattern_rule("health", ["diagnos"])]))
    with refused("health"):
        service.remember(place, "Diagnôstic de diabète en mars")
    with refused("health"):
        service.remember(place, "Got a DIAGNOSIS last week")
    assert service.list(place).items == []
    assert remember_ok(service, place, "Likes tea").text == "Likes tea"


def test_pattern_rule_roles_limit_it_to_those_roles(make_service, place):
    rule = pattern_rule("health", [r"\bdiabet"], roles=["assistant"])
    service = make_service(options=Options(rules=[rule]))
    with refused("health"):
        service.remember(place, "Has diabetes", role="assistant")
    assert remember_ok(service, place, "Has diabetes type 1", role="user").role == "user"
    assert remember_ok(service, place, "Has diabetes type 2").role is None


def test_pattern_rule_except_roles_spares_them(make_service, place):
    rule = pattern_rule("health", [r"\bdiabet"], except_roles=["doctor"])
    service = make_service(options=Options(rules=[rule]))
    with refused("health"):
        service.remember(place, "Has diabetes", role="assistant")
    with refused("health"):
        service.remember(place, "Has diabetes")
    assert remember_ok(service, place, "Has diabetes", role="doctor").text == "Has diabetes"


def test_pattern_rule_allow_when_explicit(make_service, place):
    rule = pattern_rule("health", [r"\bdiabet"], allow_when_explicit=True)
    service = make_service(options=Options(rules=[rule]))
    with refused("health"):
        service.remember(place, "Has diabetes", explicit=False)
    assert remember_ok(service, place, "Has diabetes", explicit=True).text == "Has diabetes"


def test_rules_are_checked_again_on_update_with_the_original_role(make_service, place):
    rule = pattern_rule("health", [r"\bdiabet"], roles=["assistant"])
    service = make_service(options=Options(rules=[rule]))
    by_assistant = remember_ok(service, place, "Eats lots of sugar", role="assistant")
    with refused("health"):
        service.update(place, by_assistant.id, text="Has diabetes")
    assert service.get(place, by_assistant.id).text == "Eats lots of sugar"
    by_user = remember_ok(service, place, "Eats little sugar", role="user")
    assert service.update(place, by_user.id, text="Has diabetes").memory.text == "Has diabetes"


@pytest.mark.parametrize(
    "args",
    [("Health", ["x"]), ("has space", ["x"]), ("", ["x"]), ("health", [])],
    ids=["upper-case-code", "space-in-code", "empty-code", "no-pattern"],
)
def test_pattern_rule_refuses_bad_definitions(args):
    with pytest.raises(ValueError):
        pattern_rule(*args)


RULES_TOML = """
[[rule]]
code = "health"
patterns = ["diagnos", "\\\\bdiabet"]
except_roles = ["doctor"]

[[rule]]
code = "money"
patterns = ["\\\\biban\\\\b"]
roles = ["assistant"]
allow_when_explicit = true
"""


def test_load_rules_from_a_toml_file(tmp_path, make_service, place):
    path = tmp_path / "rules.toml"
    path.write_text(RULES_TOML, encoding="utf-8")
    rules = load_rules(path)
    assert [r.code for r in rules] == ["health", "money"]
    service = make_service(options=Options(rules=rules))
    with refused("health"):
        service.remember(place, "Diagnôstic posé en mai")
    with refused("health"):
        service.remember(place, "Has diabetes")
    assert service.remember(place, "Has diabetes", role="doctor").ok
    with refused("money"):
        service.remember(place, "IBAN is FR76 1234", role="assistant")
    assert service.remember(place, "IBAN is FR76 1234", role="assistant", explicit=True).ok
    assert service.remember(place, "IBAN is FR76 5678", role="user").ok
    assert sorted(active_texts(service, place)) == ["Has diabetes", "IBAN is FR76 1234", "IBAN is FR76 5678"]


def test_load_rules_from_a_yaml_file(tmp_path, make_service, place):
    path = tmp_path / "rules.yaml"
    path.write_text("rule:\n  - code: health\n    patterns: ['diagnos']\n", encoding="utf-8")
    service = make_service(options=Options(rules=load_rules(path)))
    with refused("health"):
        service.remember(place, "A diagnosis came in")


@pytest.mark.parametrize(
    "content",
    [
        "[[rule]\ncode = 'x'",  # not TOML
        "[[rule]]\ncode = 'health'\n",  # no patterns
        "[[rule]]\npatterns = ['x']\n",  # no code
        "[[rule]]\ncode = 'health'\npatterns = ['(unclosed']\n",  # bad regular expression
        "[[rule]]\ncode = 'Not A Code'\npatterns = ['x']\n",  # bad code
        "[[rule]]\ncode = 'health'\npatterns = []\n",  # empty pattern list
        "rule = 'health'\n",  # not a list of rules
    ],
    ids=["syntax", "no-patterns", "no-code", "bad-regex", "bad-code", "empty-patterns", "not-a-list"],
)
def test_a_bad_rules_file_raises_value_error(tmp_path, content):
    path = tmp_path / "rules.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError):
        load_rules(path)


def test_a_rules_file_with_patterns_as_a_string_is_not_one_rule_per_letter(tmp_path, make_service, place):
    path = tmp_path / "rules.toml"
    path.write_text('[[rule]]\ncode = "health"\npatterns = "diagnos"\n', encoding="utf-8")
    try:
        rules = load_rules(path)
    except ValueError:
        return  # refusing the file is fine
    service = make_service(options=Options(rules=rules))
    # either it is read as the one pattern "diagnos", or refused; never one pattern per letter
    assert service.remember(place, "Likes bread").ok


# ------------------------------------------------------------------ other people's names


@pytest.fixture
def names():
    return ["Paul", "Élodie Martin"]


@pytest.fixture
def named(make_service, names):
    return make_service(names_of=lambda place: names)


@pytest.mark.parametrize(
    "text", ["Had lunch with Paul", "paul called today", "PAUL is my boss", "Met élodie martin", "Met ELODIE MARTIN"]
)
def test_naming_another_person_is_refused(named, place, text):
    with refused("other_person"):
        named.remember(place, text)
    assert named.list(place).items == []


@pytest.mark.parametrize("text", ["Had lunch with Pauline", "Paulo is a cat", "Lives on Saint-Paulin street"])
def test_names_match_whole_words_only(named, place, text):
    assert remember_ok(named, place, text).text == text


def test_the_persons_own_name_is_allowed(named, place):
    assert remember_ok(named, place, "Paul likes tea", person_name="Paul").text == "Paul likes tea"
    with refused("other_person"):
        named.remember(place, "Paul likes tea", person_name="Élodie Martin")


def test_names_are_read_for_the_place_being_written(make_service, place):
    seen = []

    def names_of(p):
        seen.append(p)
        return ["Paul"] if p == place else []

    service = make_service(names_of=names_of)
    with refused("other_person"):
        service.remember(place, "Met Paul")
    assert service.remember(("bob", "tenant-a"), "Met Paul").ok
    assert place in seen


def test_on_update_a_carried_name_stays_allowed_but_a_new_one_is_refused(make_service, place, names):
    current: list[str] = []
    service = make_service(names_of=lambda p: current)
    memory = remember_ok(service, place, "Lunch with Paul")
    current.extend(["Paul", "Marie"])
    kept = service.update(place, memory.id, text="Lunch with Paul on Friday")
    assert kept.ok and kept.memory.text == "Lunch with Paul on Friday"
    with refused("other_person"):
        service.update(place, memory.id, text="Lunch with Paul and Marie")
    assert service.get(place, memory.id).text == "Lunch with Paul on Friday"
    # the name carried in the text also allows an update that only changes the importance
    assert service.update(place, memory.id, importance=5).memory.importance == 5


# ------------------------------------------------------------------ paused


def test_a_paused_person_learns_nothing_until_resumed(service, place):
    assert service.pause(place) is True
    assert service.is_paused(place) is True
    with refused("paused"):
        service.remember(place, "Likes tea")
    assert service.list(place, state="all").items == []
    assert service.resume(place) is False
    assert service.is_paused(place) is False
    assert remember_ok(service, place, "Likes tea").text == "Likes tea"


def test_refusal_codes_are_codes_not_sentences(make_service, place):
    service = make_service(options=Options(kinds=Kinds(default=None), rules=[pattern_rule("health", ["diagnos"])]))
    codes = set()
    for text, kind in [("", None), ("x" * 501, None), ("ok", "nope"), ("diagnosis", "fact")]:
        with pytest.raises(Refused) as caught:
            service.remember(place, text, kind=kind)
        codes.add(caught.value.code)
    assert codes == {"empty", "too_long", "invalid_kind", "health"}


def test_a_refused_correction_never_reaches_the_embedder(make_service, embedder, place):
    # The embedder may be a remote API: text the rules keep in must not leave before they are checked.
    service = make_service(names_of=lambda _place: ["Jana"],
                           options=Options(rules=[pattern_rule("health", ["diagnos"])]))
    memory = remember_ok(service, place, "Likes tea")
    embedder.calls.clear()
    for text, code in [("Jana has a cold", "other_person"), ("x" * 501, "too_long"), ("A diagnosis", "health"),
                       ("   ", "empty")]:
        with refused(code):
            service.update(place, memory.id, text=text)
    with refused("not_found"):
        service.update(place, "no-such-id", text="Likes green tea")
    service.pause(place)
    with refused("paused"):
        service.update(place, memory.id, text="Likes green tea", origin="inferred")
    service.resume(place)
    with refused("conflict"):
        service.update(place, memory.id, text="Likes green tea", expected_revision=7)
    assert embedder.calls == []
    service.update(place, memory.id, importance=5)  # the text did not change: nothing to embed
    assert embedder.calls == []
    service.update(place, memory.id, text="Likes green tea")
    assert [texts for texts, _purpose in embedder.calls] == [["Likes green tea"]]
