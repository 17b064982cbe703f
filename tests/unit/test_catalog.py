"""The message catalog (DESIGN §3, §10): refusal codes and tool outcomes in English and French."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from portal.domain import catalog
from portal.domain.catalog import CATALOGS, OUTCOME_CODES, REFUSAL_CODES, languages, message, resolve_language

SERVICE_REFUSALS = (
    "empty", "too_long", "invalid_kind", "kind_not_allowed", "other_person", "paused", "not_found", "conflict",
    "nothing_to_undo", "ai_disabled", "not_shown", "invalid_limit", "invalid_cursor", "invalid_state",
    "invalid_format", "invalid_ids", "invalid_portrait", "invalid_on_duplicate", "invalid_where",
)
TOOL_REFUSALS = ("invalid_arguments", "unknown_tool")
OUTCOMES = ("memory_saved", "memories_found", "memory_corrected", "memory_forgotten")


def test_languages_are_english_and_french():
    assert languages() == ("en", "fr")


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("code", SERVICE_REFUSALS + TOOL_REFUSALS)
def test_every_refusal_code_has_its_own_text(language, code):
    text = message(f"refused.{code}", language)
    assert isinstance(text, str) and text.strip()
    assert text != message("refused", language), "a known code deserves more than the generic text"
    assert "{" not in text and "refused" not in text


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("code", OUTCOMES)
def test_every_tool_outcome_has_a_text(language, code):
    for values in ({}, {"count": 0}, {"count": 1}, {"count": 7}):
        text = message(code, language, **values)
        assert isinstance(text, str) and text.strip()
        assert "{" not in text


def test_both_languages_have_the_same_keys_and_differ():
    assert set(CATALOGS["en"]) == set(CATALOGS["fr"])
    for key in CATALOGS["en"]:
        assert message(key, "en") != message(key, "fr"), key


def test_codes_listed_by_the_module_cover_the_service_and_tools():
    assert set(SERVICE_REFUSALS + TOOL_REFUSALS) <= set(REFUSAL_CODES)
    assert set(OUTCOMES) <= set(OUTCOME_CODES)


def test_the_service_refusal_codes_are_all_in_the_catalog():
    """Every `Refused("...")` and `InvalidArgument("...")` code the service layer can answer has a text."""
    import portal.domain as domain
    import portal.services as services

    found: set[str] = set()
    for path in [*Path(services.__file__).parent.glob("*.py"), *Path(domain.__file__).parent.rglob("*.py")]:
        source = path.read_text(encoding="utf-8")
        found.update(re.findall(r'(?:Refused|InvalidArgument)\("([a-z_]+)"', source))
        found.update(re.findall(r'_refuse\(result, "([a-z_]+)"\)', source))
    assert found, "the scan found no codes"
    assert found <= set(REFUSAL_CODES), found - set(REFUSAL_CODES)


def test_english_and_french_texts():
    assert message("refused.paused", "en") == "Memory is paused: nothing is learnt or changed until you resume it."
    assert (message("refused.paused", "fr") or "").startswith("La mémoire est en pause")
    assert message("memory_saved", "en") == "Saved to memory."
    assert message("memory_forgotten", "fr") == "Souvenir effacé."


def test_counts_choose_the_plural_form():
    assert message("memories_found", "en", count=0) == "No memories found."
    assert message("memories_found", "en", count=1) == "Found 1 memory."
    assert message("memories_found", "en", count=3) == "Found 3 memories."
    assert message("memories_found", "fr", count=0) == "Aucun souvenir trouvé."
    assert message("memories_found", "fr", count=1) == "1 souvenir trouvé."
    assert message("memories_found", "fr", count=12) == "12 souvenirs trouvés."


@pytest.mark.parametrize("count", [None, "3", 2.5, True, [1]])
def test_a_missing_or_odd_count_gives_the_plain_form(count):
    values = {} if count is None else {"count": count}
    assert message("memories_found", "en", **values) == "Memories found."
    assert message("memories_found", "fr", **values) == "Souvenirs trouvés."


def test_extra_values_are_harmless():
    assert message("memory_saved", "en", count=3, id="x") == "Saved to memory."


@pytest.mark.parametrize("tag, expected", [
    ("fr", "fr"), ("fr-FR", "fr"), ("fr_CA", "fr"), ("FR", "fr"), (" fr-be ", "fr"),
    ("en", "en"), ("en-GB", "en"), ("EN-us", "en"),
])
def test_regional_tags_fall_back_to_their_language(tag, expected):
    assert resolve_language(tag) == expected
    assert message("refused.empty", tag) == message("refused.empty", expected)


@pytest.mark.parametrize("tag", ["de", "de-DE", "pt-BR", "xx", "e", "english", "french", "*", "fr;q=0.9", 42, ["fr"]])
def test_a_language_the_catalog_lacks_gives_none_not_english(tag):
    assert resolve_language(tag) is None
    assert message("refused.empty", tag) is None
    assert message("memory_saved", tag) is None


@pytest.mark.parametrize("tag", [None, "", "   "])
def test_no_language_means_the_default(tag):
    assert resolve_language(tag) == catalog.DEFAULT_LANGUAGE == "en"
    assert message("memory_saved", tag) == "Saved to memory."


@pytest.mark.parametrize("language", ["en", "fr", "fr-FR"])
def test_a_content_rule_code_without_text_gets_the_generic_refusal(language):
    generic = message("refused", language)
    assert generic
    assert message("refused.health_data", language) == generic
    assert message("refused.no_bank_details", language) == generic
    assert message("refused.health_data", "en") != message("refused.health_data", "fr")


def test_a_bare_known_refusal_code_is_read_as_a_refusal():
    assert message("paused", "en") == message("refused.paused", "en")
    assert message("other_person", "fr") == message("refused.other_person", "fr")


@pytest.mark.parametrize("key", ["health_data", "nope", "", "memory_savedx", "refused_empty", "refusedx.empty"])
def test_an_unknown_key_gives_none(key):
    assert message(key, "en") is None
    assert message(key, "fr") is None


def test_a_non_string_key_gives_none():
    assert message(None, "en") is None  # type: ignore[arg-type]
    assert message(3, "fr") is None  # type: ignore[arg-type]


def test_the_catalog_imports_no_web_framework():
    source = Path(catalog.__file__).read_text(encoding="utf-8")
    assert not re.search(r"^\s*(from|import)\s+flask", source, re.M | re.I)
