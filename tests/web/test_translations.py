"""The French catalog is complete and what the app loads is compiled from it.

The app reads the compiled .mo at run time, so a .po fixed without `make translations` would
change nothing a person sees; and a text added to a template without a translation would show in
English in the middle of a French page. Each test below fails in one of those cases.
"""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[2]
TRANSLATIONS = ROOT / "portal" / "translations"
LANGUAGES = ("fr",)


def po_path(language: str) -> Path:
    return TRANSLATIONS / language / "LC_MESSAGES" / "messages.po"


def load_po(language: str) -> Catalog:
    with po_path(language).open("rb") as handle:
        return read_po(handle, locale=language)


def described(message: Message) -> str:
    return f"{message.id!r} ({', '.join(f'{f}:{n}' for f, n in message.locations)})"


def translations(catalog: Catalog) -> dict[tuple[object, object], object]:
    """What a catalog answers: msgid (and context) to translation, with the plural rule."""
    def frozen(value: object) -> object:  # plural entries are tuples in a .po and lists in a .mo
        return tuple(value) if isinstance(value, list | tuple) else value

    table: dict[tuple[object, object], object] = {(frozen(m.id), m.context): frozen(m.string) for m in catalog if m.id}
    table[("", "plural-forms")] = catalog.plural_forms
    return table


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_entry_is_translated_and_not_fuzzy(language: str) -> None:
    catalog = load_po(language)
    assert len([m for m in catalog if m.id]) > 50
    untranslated = [
        described(m) for m in catalog
        if m.id and (not m.string or (isinstance(m.string, tuple | list) and not all(m.string)))
    ]
    fuzzy = [described(m) for m in catalog if m.id and m.fuzzy]
    assert untranslated == [], f"untranslated in {language}; translate them and run `make translations`"
    assert fuzzy == [], f"fuzzy in {language}: check the translation, remove the fuzzy flag, `make translations`"
    assert not catalog.fuzzy, "the catalog header is marked fuzzy"
    obsolete = sorted(str(m.id) for m in catalog.obsolete.values())
    assert obsolete == [], "obsolete entries: run `make translations`"


@pytest.mark.parametrize("language", LANGUAGES)
def test_placeholders_survive_translation(language: str) -> None:
    """A translation that drops or renames %(count)d would raise or print the wrong thing."""
    catalog = load_po(language)
    problems = [f"{described(m)}: {errors}" for m, errors in catalog.check() if errors]
    assert problems == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_compiled_catalog_is_the_po_compiled(language: str, tmp_path: Path) -> None:
    shipped = TRANSLATIONS / language / "LC_MESSAGES" / "messages.mo"
    assert shipped.is_file(), "no .mo: run `make translations`"
    fresh = tmp_path / "messages.mo"
    with fresh.open("wb") as handle:
        write_mo(handle, load_po(language))
    with shipped.open("rb") as handle:
        loaded = read_mo(handle)
    with fresh.open("rb") as handle:
        expected = read_mo(handle)
    assert translations(loaded) == translations(expected), "the .mo is older than the .po: run `make translations`"


def source_messages() -> dict[str, list[str]]:
    """Every text the sources mark for translation, as `pybabel extract -F babel.cfg` finds them."""
    config = configparser.RawConfigParser()
    config.read(ROOT / "babel.cfg")
    method_map = [(section.split(":", 1)[1].strip(), section.split(":", 1)[0].strip()) for section in config.sections()]
    options_map = {pattern: {} for pattern, _ in method_map}
    keywords = {**DEFAULT_KEYWORDS, "_": None, "gettext": None}
    found: dict[str, list[str]] = {}
    for filename, line, message, _comments, _context in extract_from_dir(
        str(ROOT), method_map, options_map, keywords=keywords  # type: ignore[arg-type]
    ):
        msgid = message[0] if isinstance(message, tuple) else message
        if msgid:
            found.setdefault(msgid, []).append(f"{filename}:{line}")
    return found


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_text_in_the_sources_is_in_the_catalog(language: str) -> None:
    catalog = load_po(language)
    known = {m.id[0] if isinstance(m.id, tuple) else m.id for m in catalog if m.id}
    missing = {msgid: where for msgid, where in source_messages().items() if msgid not in known}
    assert missing == {}, "texts not in the catalog: run `make translations` and translate them"


def test_undo_and_cancel_read_differently_in_french() -> None:
    """The toast's Undo and the edit form's Cancel sit on the same screen: they must not both say
    « Annuler »."""
    catalog = load_po("fr")
    undo, cancel = catalog.get("Undo"), catalog.get("Cancel")
    assert undo is not None and cancel is not None
    assert undo.string and cancel.string and undo.string != cancel.string


GETTEXT = {"_", "gettext", "ngettext", "lazy_gettext"}


def test_every_translated_text_is_one_pybabel_can_find() -> None:
    """`_(some_variable)` is invisible to `pybabel extract`: its text would never reach the catalog
    and would show in English on a French page. Texts chosen by a code (refusals) come from the
    one refusal catalog, portal.domain.catalog, which has its own test."""
    hidden = []
    for path in sorted((ROOT / "portal").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in GETTEXT):
                continue
            texts = node.args[:2] if node.func.id == "ngettext" else node.args[:1]
            for text in texts:
                if isinstance(text, ast.Constant) and isinstance(text.value, str):
                    continue
                hidden.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    for path in sorted((ROOT / "templates").rglob("*.html")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(r"(?<![\w.])(_|gettext|ngettext)\(\s*(?![\s\"'])", line):
                hidden.append(f"{path.relative_to(ROOT)}:{number}")
    assert hidden == []
