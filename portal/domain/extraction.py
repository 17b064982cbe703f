"""Reading a model's consolidation answer (DESIGN §7) into proposed facts, corrections and a summary.

Models seldom send clean JSON. They wrap it in a code fence or a sentence, leave raw line breaks
and trailing commas, rename the keys, send a bare list, or stop half way when they run out of
tokens. `read_extraction` reads all of that with a small tolerant scanner rather than `json.loads`
(`portal.domain.json_scanner`), so a cut answer still yields every fact that was written out whole
before the cut. This module finds the JSON in the answer (fences, prose around it) and reads its
items.

Nothing here judges a fact (length, privacy, duplicates, importance range): the service does that,
once, for every way a memory can arrive.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from portal.domain.json_scanner import CutDict, CutList, Scanner, Unreadable

FACT_KEYS = ("facts", "memories", "new_facts")
CORRECTION_KEYS = ("corrections", "updates")
TEXT_KEYS = ("text", "fact", "memory", "content")
KIND_KEYS = ("kind", "type", "category")
IMPORTANCE_KEYS = ("importance", "priority")
SOURCE_KEYS = ("messages", "sources", "evidence")
ID_KEYS = ("id", "memory_id")
_ANSWER_KEYS = frozenset((*FACT_KEYS, *CORRECTION_KEYS, "summary"))


@dataclass(frozen=True, slots=True)
class ProposedFact:
    """A fact the model proposes to keep, as it sent it."""

    text: str
    kind: str | None = None
    importance: Any = None  # raw: the service rounds and clamps it
    messages: tuple[int, ...] = ()  # indices of the transcript messages the model cited


@dataclass(frozen=True, slots=True)
class ProposedCorrection:
    """A change the model proposes to a memory it was shown (the service checks the id was shown)."""

    id: str
    text: str | None = None
    kind: str | None = None
    importance: Any = None


@dataclass(frozen=True, slots=True)
class Extraction:
    """What could be read from one answer."""

    facts: tuple[ProposedFact, ...]
    corrections: tuple[ProposedCorrection, ...]
    summary: str | None
    cut: bool  # the answer stopped half way; only the whole items before the cut were kept


def read_extraction(answer: Any) -> Extraction | None:
    """Read a model's answer; never raises.

    Returns None when the answer holds nothing JSON-ish at all, otherwise an Extraction, possibly
    without facts. A fact or correction is kept only when it was written out whole: an object cut
    by the end of the answer may have lost the end of its text, and half a fact is a wrong fact.
    """
    if isinstance(answer, bytes | bytearray):
        answer = bytes(answer).decode("utf-8", errors="replace")
    if isinstance(answer, str):
        value = _answer_value(answer)
    elif isinstance(answer, dict | list):  # a client that already decoded the JSON
        value = answer
    else:
        return None
    if value is None:
        return None
    cut = isinstance(value, CutList | CutDict)
    if isinstance(value, list):
        return Extraction(_whole(value, _fact), (), None, cut)
    facts, corrections = _first(value, FACT_KEYS, list) or [], _first(value, CORRECTION_KEYS, list) or []
    summary = value.get("summary")
    summary = summary if isinstance(summary, str) and summary.strip() else None
    return Extraction(_whole(facts, _fact), _whole(corrections, _correction), summary, cut)


# --- reading the items ------------------------------------------------------------------------

_TAG = re.compile(r"\s*[A-Za-z_#-]{0,10}\s*([0-9]{1,9})\s*")  # 3, "3", "m3", "s3", "#3", "msg 3"


def _first(fields: dict[Any, Any], keys: tuple[str, ...], kind: type | tuple[type, ...] = object) -> Any:
    """The value under the first of `keys` that holds a `kind`, or None."""
    for key in keys:
        value = fields.get(key)
        if value is not None and isinstance(value, kind):
            return value
    return None


def _whole(items: list[Any], read: Any) -> tuple[Any, ...]:
    return tuple(item for item in map(read, items) if item is not None)


def _fact(item: Any) -> ProposedFact | None:
    if isinstance(item, str):
        return ProposedFact(item) if item.strip() else None
    if not isinstance(item, dict) or isinstance(item, CutDict):
        return None
    text = _first(item, TEXT_KEYS, str)
    if text is None or not text.strip():
        return None
    return ProposedFact(
        text, _first(item, KIND_KEYS, str), _first(item, IMPORTANCE_KEYS), _message_indices(_first(item, SOURCE_KEYS))
    )


def _correction(item: Any) -> ProposedCorrection | None:
    if not isinstance(item, dict) or isinstance(item, CutDict):
        return None
    ident = _first(item, ID_KEYS, (str, int))
    if ident is None or isinstance(ident, bool) or not str(ident).strip():
        return None
    text = _first(item, TEXT_KEYS, str)
    return ProposedCorrection(
        str(ident).strip(), text if text and text.strip() else None, _first(item, KIND_KEYS, str), _first(item, IMPORTANCE_KEYS)
    )


def _message_indices(value: Any) -> tuple[int, ...]:
    found: dict[int, None] = {}  # ordered and without repeats
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, int) and not isinstance(item, bool) and item >= 0:
            found[item] = None
        elif isinstance(item, str) and (tag := _TAG.fullmatch(item)):
            found[int(tag.group(1))] = None
    return tuple(found)


# --- finding the JSON in the answer -----------------------------------------------------------

# A fence opens at the start of a line, so "```" inside a JSON string (never on its own line) is no fence.
_FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.M | re.S)
_STARTS = re.compile(r"[\[{]")


def _regions(text: str) -> Iterator[str]:
    """Fenced blocks first (their closing fence ends the JSON), then the whole answer."""
    for block in _FENCE.finditer(text):
        yield block.group(1)
    yield text


def _answer_value(text: str) -> Any:
    """The first list or object that reads as an answer; else the first one at all; else None.

    A value the answer ended inside is taken at once: nothing after it was written. A scan never
    starts inside text already scanned, so a list nested in broken JSON (say a fact's
    `"sources": ["m1"]`) is never mistaken for a list of facts, and the work stays linear.
    """
    fallback = None
    for region in _regions(text):
        resume = 0
        for start in _STARTS.finditer(region):
            if start.start() < resume:
                continue
            scanner = Scanner(region, start.start())
            try:
                value = scanner.value()
            except Unreadable:
                continue  # a bracket in the prose ("see [1]"), or broken JSON
            finally:
                resume = scanner.pos
            if isinstance(value, CutList | CutDict) or _looks_like_answer(value):
                return value
            if fallback is None:
                fallback = value
    return fallback


def _looks_like_answer(value: Any) -> bool:
    if isinstance(value, dict):
        return not _ANSWER_KEYS.isdisjoint(value)
    return any(isinstance(item, str | dict) for item in value)
