"""Writing refusals (DESIGN §3): codes, never sentences, and a refusal changes nothing."""

from __future__ import annotations

import pytest

from portal.domain.options import Options
from portal.domain.rules import Kinds, load_rules, pattern_rule
from portal.domain.types import Refused

from .conftest import active_texts, remember_ok


def _refused(result, code):
    assert isinstance(result, Refused), f"expected refusal {code!r}, got {result}"
    assert result.ok is False
    assert result.code == code


# ------------------------------------------------------------------ empty and too long


@pytest.mark.parametrize("text", ["", "   ", "\n\t  \n", None, 42, "** **", "``", "#  "])
def test_empty_text_is_refused_and_nothing_is_kept(service, place, text):
    _refused(service.remember(place, text), "empty")
    assert service.list(place, state="all").items == []


def test_501_characters_is_too_long_500_is_kept(service, place):
    _refused(service.remember(place, "a" * 501), "too_long")
    assert service.list(place).items == []
    kept = remember_ok(service, place, "b" * 500)
    assert len(kept.text) == 500


def test_the_length_limit_is_configurable(make_service, place):
    service = make_service(options=Options(max_text_length=10))
    _refused(service.remember(place, "eleven char"), "too_long")
    assert remember_ok(service, place, "ten chars!").text == "ten chars!"


def test_update_to_empty_or_too_long_is_refused_and_keeps_the_text(service, place):
    memory = remember_ok(service, place, "Likes tea")
    _refused(service.update(place, memory.id, text="   "), "empty")
    _refused(service.update(place, memory.id, text="x" * 501), "too_long")
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
    _refused(service.remember(place, "Plays chess", kind="hobby"), "invalid_kind")
    assert service.list(place).items == []
    assert remember_ok(service, place, "Plays chess", kind="fact").kind == "fact"


@pytest.mark.parametrize(
    "raw, kind",
    [("objectif", "goal"), ("Objectif", "goal"), ("OBJECTIF", "goal"), ("GOAL", "goal"), ("  Goal ", "goal"),
     ("Préférence", "preference"), ("PREFERENCE", "preference"), ("Évènement", None)],
)
def test_kind_aliases_accents_and_case(make_service, place, raw, kind):
    service = make_service(options=Options(kinds=Kinds(aliases={"objectif": "goal"}, default=None)))
    result = service.remember(place, "Learn Portuguese", kind=raw)
    if kind is None:
        _refused(result, "invalid_kind")
    else:
        assert result.ok and result.memory.kind == kind


def test_an_alias_also_works_on_update(make_service, place):
    service = make_service(options=Options(kinds=Kinds(aliases={"objectif": "goal"}, default=None)))
    memory = remember_ok(service, place, "Learn Portuguese", kind="fact")
    assert service.update(place, memory.id, kind="Objectif").memory.kind == "goal"
    _refused(service.update(place, memory.id, kind="hobby"), "invalid_kind")
    assert service.get(place, memory.id).kind == "goal"


def test_role_kinds_refuse_a_kind_the_role_may_not_write(make_service, place):
    kinds = Kinds(role_kinds={"assistant": ["preference", "fact"]})
    service = make_service(options=Options(kinds=kinds))
    _refused(service.remember(place, "Become a pilot", kind="goal", role="assistant"), "kind_not_allowed")
    assert service.list(place).items == []
    assert remember_ok(service, place, "Prefers short answers", kind="preference", role="assistant").kind == "preference"
    # roles without an entry, and no role at all, may write any kind
    assert remember_ok(service, place, "Become a pilot", kind="goal", role="user").kind == "goal"
    assert remember_ok(service, place, "Visit Japan", kind="goal").kind == "goal"


# ------------------------------------------------------------------ content rules


def test_pattern_rule_matches_folded_text_and_case(make_service, place):
    service = make_service(options=Options(rules=[pattern_rule("health", ["diagnos"])]))
    _refused(service.remember(place, "Diagnôstic de diabète en mars"), "health")
    _refused(service.remember(place, "Got a DIAGNOSIS last week"), "health")
    assert service.list(place).items == []
    assert remember_ok(service, place, "Likes tea").text == "Likes tea"


def test_pattern_rule_roles_limit_it_to_those_roles(make_service, place):
    rule = pattern_rule("health", [r"\bdiabet"], roles=["assistant"])
    service = make_service(options=Options(rules=[rule]))
    _refused(service.remember(place, "Has diabetes", role="assistant"), "health")
    assert remember_ok(service, place, "Has diabetes type 1", role="user").role == "user"
    assert remember_ok(service, place, "Has diabetes type 2").role is None


def test_pattern_rule_except_roles_spares_them(make_service, place):
    rule = pattern_rule("health", [r"\bdiabet"], except_roles=["doctor"])
    service = make_service(options=Options(rules=[rule]))
    _refused(service.remember(place, "Has diabetes", role="assistant"), "health")
    _refused(service.remember(place, "Has diabetes"), "health")
    assert remember_ok(service, place, "Has diabetes", role="doctor").text == "Has diabetes"


def test_pattern_rule_allow_when_explicit(make_service, place):
    rule = pattern_rule("health", [r"\bdiabet"], allow_when_explicit=True)
    service = make_service(options=Options(rules=[rule]))
    _refused(service.remember(place, "Has diabetes", explicit=False), "health")
    assert remember_ok(service, place, "Has diabetes", explicit=True).text == "Has diabetes"


def test_rules_are_checked_again_on_update_with_the_original_role(make_service, place):
    rule = pattern_rule("health", [r"\bdiabet"], roles=["assistant"])
    service = make_service(options=Options(rules=[rule]))
    by_assistant = remember_ok(service, place, "Eats lots of sugar", role="assistant")
    _refused(service.update(place, by_assistant.id, text="Has diabetes"), "health")
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
    _refused(service.remember(place, "Diagnôstic posé en mai"), "health")
    _refused(service.remember(place, "Has diabetes"), "health")
    assert service.remember(place, "Has diabetes", role="doctor").ok
    _refused(service.remember(place, "IBAN is FR76 1234", role="assistant"), "money")
    assert service.remember(place, "IBAN is FR76 1234", role="assistant", explicit=True).ok
    assert service.remember(place, "IBAN is FR76 5678", role="user").ok
    assert sorted(active_texts(service, place)) == ["Has diabetes", "IBAN is FR76 1234", "IBAN is FR76 5678"]


def test_load_rules_from_a_yaml_file(tmp_path, make_service, place):
    path = tmp_path / "rules.yaml"
    path.write_text("rule:\n  - code: health\n    patterns: ['diagnos']\n", encoding="utf-8")
    service = make_service(options=Options(rules=load_rules(path)))
    _refused(service.remember(place, "A diagnosis came in"), "health")


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
    _refused(named.remember(place, text), "other_person")
    assert named.list(place).items == []


@pytest.mark.parametrize("text", ["Had lunch with Pauline", "Paulo is a cat", "Lives on Saint-Paulin street"])
def test_names_match_whole_words_only(named, place, text):
    assert remember_ok(named, place, text).text == text


def test_the_persons_own_name_is_allowed(named, place):
    assert remember_ok(named, place, "Paul likes tea", person_name="Paul").text == "Paul likes tea"
    _refused(named.remember(place, "Paul likes tea", person_name="Élodie Martin"), "other_person")


def test_names_are_read_for_the_place_being_written(make_service, place):
    seen = []

    def names_of(p):
        seen.append(p)
        return ["Paul"] if p == place else []

    service = make_service(names_of=names_of)
    _refused(service.remember(place, "Met Paul"), "other_person")
    assert service.remember(("bob", "tenant-a"), "Met Paul").ok
    assert place in seen


def test_on_update_a_carried_name_stays_allowed_but_a_new_one_is_refused(make_service, place, names):
    current: list[str] = []
    service = make_service(names_of=lambda p: current)
    memory = remember_ok(service, place, "Lunch with Paul")
    current.extend(["Paul", "Marie"])
    kept = service.update(place, memory.id, text="Lunch with Paul on Friday")
    assert kept.ok and kept.memory.text == "Lunch with Paul on Friday"
    _refused(service.update(place, memory.id, text="Lunch with Paul and Marie"), "other_person")
    assert service.get(place, memory.id).text == "Lunch with Paul on Friday"
    # the name carried in the text also allows an update that only changes the importance
    assert service.update(place, memory.id, importance=5).memory.importance == 5


# ------------------------------------------------------------------ paused


def test_a_paused_person_learns_nothing_until_resumed(service, place):
    assert service.pause(place) is True
    assert service.is_paused(place) is True
    _refused(service.remember(place, "Likes tea"), "paused")
    assert service.list(place, state="all").items == []
    assert service.resume(place) is False
    assert service.is_paused(place) is False
    assert remember_ok(service, place, "Likes tea").text == "Likes tea"


def test_refusal_codes_are_codes_not_sentences(make_service, place):
    service = make_service(options=Options(kinds=Kinds(default=None), rules=[pattern_rule("health", ["diagnos"])]))
    codes = {
        service.remember(place, "").code,
        service.remember(place, "x" * 501).code,
        service.remember(place, "ok", kind="nope").code,
        service.remember(place, "diagnosis", kind="fact").code,
    }
    assert codes == {"empty", "too_long", "invalid_kind", "health"}
