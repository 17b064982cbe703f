"""What may be kept: kinds, importance, content rules and other people's names.

Rules are configuration, not code: `load_rules(path)` reads a TOML or YAML file of pattern rules,
so a health product, a school and a bank can forbid different things without a release.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portal.domain.text import fold, words

DEFAULT_KINDS = ("goal", "preference", "fact", "person", "event", "feeling")
IMPORTANCE_WORDS = {
    "lowest": 1, "minimal": 1, "trivial": 1, "very low": 1,
    "low": 2, "minor": 2,
    "medium": 3, "normal": 3, "moderate": 3, "average": 3,
    "high": 4, "important": 4, "major": 4,
    "highest": 5, "critical": 5, "very high": 5, "urgent": 5, "essential": 5,
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """What a rule looks at: the cleaned text, who is writing and whether the person asked for it."""

    text: str
    kind: str
    role: str | None
    explicit: bool


Rule = Callable[[Candidate], "str | None"]


@dataclass(frozen=True)
class PatternRule:
    """Refuse with `code` when one of the patterns matches the raw or the folded text."""

    code: str
    patterns: tuple[re.Pattern[str], ...]
    roles: frozenset[str] | None = None
    except_roles: frozenset[str] = frozenset()
    allow_when_explicit: bool = False

    def __call__(self, candidate: Candidate) -> str | None:
        if self.roles is not None and candidate.role not in self.roles:
            return None
        if candidate.role in self.except_roles:
            return None
        if self.allow_when_explicit and candidate.explicit:
            return None
        folded = fold(candidate.text)
        for pattern in self.patterns:
            if pattern.search(candidate.text) or pattern.search(folded):
                return self.code
        return None


def pattern_rule(
    code: str,
    patterns: Iterable[str | re.Pattern[str]],
    roles: Iterable[str] | None = None,
    except_roles: Iterable[str] | None = None,
    allow_when_explicit: bool = False,
) -> PatternRule:
    """Build a content rule from regular expressions (strings are compiled case-insensitive)."""
    if not isinstance(code, str) or not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", code):
        raise ValueError("a rule code is lower-case letters, digits and underscores")
    # A lone string is one pattern (and one role), never a sequence of letters.
    if isinstance(patterns, (str, re.Pattern)):
        patterns = [patterns]
    if isinstance(roles, str):
        roles = [roles]
    if isinstance(except_roles, str):
        except_roles = [except_roles]
    if not all(isinstance(p, (str, re.Pattern)) for p in patterns):
        raise ValueError(f"rule {code}: patterns are regular expressions")
    compiled = tuple(p if isinstance(p, re.Pattern) else re.compile(p, re.IGNORECASE) for p in patterns)
    if not compiled:
        raise ValueError(f"rule {code} has no pattern")
    return PatternRule(
        code=code,
        patterns=compiled,
        roles=frozenset(roles) if roles is not None else None,
        except_roles=frozenset(except_roles or ()),
        allow_when_explicit=allow_when_explicit,
    )


def load_rules(path: str | Path) -> list[PatternRule]:
    """Read pattern rules from a TOML (or YAML) file with a list of `[[rule]]` tables.

    Each rule: `code`, `patterns` (list of regular expressions), optional `roles`,
    `except_roles`, `allow_when_explicit`. A bad file raises ValueError naming the problem.
    """
    p = Path(path)
    raw = p.read_text(encoding="utf-8")
    data: Any
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(raw) or {}
    else:
        data = tomllib.loads(raw)
    entries = data.get("rule", data.get("rules", [])) if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ValueError("rules file: expected a list of rules under 'rule'")
    rules = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "code" not in entry or "patterns" not in entry:
            raise ValueError(f"rules file: rule {i + 1} needs 'code' and 'patterns'")
        try:
            rules.append(
                pattern_rule(
                    entry["code"],
                    entry["patterns"],
                    roles=entry.get("roles"),
                    except_roles=entry.get("except_roles"),
                    allow_when_explicit=bool(entry.get("allow_when_explicit", False)),
                )
            )
        except re.error as exc:
            raise ValueError(f"rules file: rule {i + 1} has a bad pattern ({exc})") from None
    return rules


@dataclass(frozen=True)
class Kinds:
    """The kinds a memory may have, their aliases, a fallback and which roles may write which."""

    kinds: Sequence[str] = DEFAULT_KINDS
    aliases: dict[str, str] = field(default_factory=dict)
    default: str | None = "fact"
    role_kinds: dict[str, Sequence[str]] = field(default_factory=dict)

    def resolve(self, raw: Any) -> str | None:
        """The kind `raw` names (folded, then through aliases), the default when absent, or None."""
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return self.default
        if not isinstance(raw, str):
            return None
        key = fold(raw.strip())
        by_fold = {fold(k): k for k in self.kinds}
        if key in by_fold:
            return by_fold[key]
        aliases = {fold(a): k for a, k in self.aliases.items()}
        if key in aliases and aliases[key] in self.kinds:
            return aliases[key]
        return self.default

    def allowed(self, kind: str, role: str | None) -> bool:
        if role is None or role not in self.role_kinds:
            return True
        return kind in self.role_kinds[role]


def importance_of(raw: Any, default: int = 3) -> int:
    """Round and clamp what models send ("4", 4.6, "high") to 1–5; anything unreadable is `default`."""
    value: float | None = None
    if isinstance(raw, bool) or raw is None:
        value = None
    elif isinstance(raw, int):
        value = float(min(max(raw, -10), 10))  # an int too big for a float is still "very high"
    elif isinstance(raw, float):
        value = raw
    elif isinstance(raw, str):
        text = raw.strip().lower()
        if text in IMPORTANCE_WORDS:
            value = float(IMPORTANCE_WORDS[text])
        else:
            try:
                value = float(text)
            except ValueError:
                value = None
    if value is None or math.isnan(value):
        return default
    if math.isinf(value):
        return 5 if value > 0 else 1
    return int(min(5, max(1, math.floor(value + 0.5))))


def names_added(text: str, names: Iterable[str], own_name: str | None, carried: str | None = None) -> bool:
    """Whether `text` names someone from `names` as a whole word, other than the person.

    On an edit, `carried` is the memory's text before: a name it already had stays allowed.
    """
    text_words = words(text)
    before_words = words(carried) if carried else []
    own = words(own_name) if own_name else []
    for name in names:
        name_words = words(name)
        if not name_words or name_words == own:
            continue
        if _has_run(text_words, name_words) and not _has_run(before_words, name_words):
            return True
    return False


def _has_run(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))
