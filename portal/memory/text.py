"""Text handling shared by writing and ranking: cleaning model Markdown, folding, words.

Folding lowers case and strips accents so "Café" and "cafe" meet; it is used for kinds, names,
duplicate detection and lexical ranking alike, so all four agree on what "the same word" means.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata

_BOLD = re.compile(r"(\*\*|__)(.+?)\1", re.S)
_STRAY_MARKERS = re.compile(r"\*\*|(?<![\w])__|__(?![\w])")
_CODE = re.compile(r"`+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+(?:[#+][^\W_]*)?|[^\W_]+", re.UNICODE)


def clean_text(text: str) -> str:
    """Remove the Markdown models add (bold, code ticks, a leading heading) and collapse whitespace.

    `C#`, `C++` and `snake_case` survive: only paired `__` and `**` markers, backticks and a
    heading's leading hashes are taken out.
    """
    if not isinstance(text, str):
        return ""
    out = _BOLD.sub(r"\2", text)
    out = _STRAY_MARKERS.sub("", out)
    out = _CODE.sub("", out)
    out = _HEADING.sub("", out)
    return _SPACE.sub(" ", out).strip()


def fold(text: str) -> str:
    """Lower case without accents: "Élodie" → "elodie"."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    """The folded words of a text, in order (numbers count as words)."""
    return _WORD.findall(fold(text))


def words_key(text: str, secret: bytes | None = None) -> str:
    """A key that two texts share exactly when their folded words are the same.

    With a secret (when memory text is encrypted) it is a keyed hash, so equal texts can be found
    without the database learning anything it could reverse.
    """
    joined = " ".join(words(text)).encode("utf-8")
    if secret:
        return hmac.new(secret, joined, hashlib.sha256).hexdigest()
    return hashlib.sha256(joined).hexdigest()


def search_text(text: str) -> str:
    """What the database's full-text index reads: the folded words joined by spaces."""
    return " ".join(words(text))



_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_CARD = re.compile(r"\b(?:\d[ -]?){13,19}\b")
_PHONE = re.compile(r"(?<![\w])\+?\d(?:[\s.()-]?\d){7,14}(?![\w])")


def mask_pii(text: str, place: object = None) -> str:
    """The built-in mask: e-mail addresses, card numbers and phone numbers become placeholders."""
    out = _EMAIL.sub("[email]", text)
    out = _CARD.sub(lambda m: "[card]" if _luhn(m.group()) else m.group(), out)
    return _PHONE.sub("[phone]", out)


def no_mask(text: str, place: object = None) -> str:
    """The default mask: text reaches the embedder and the model as it is."""
    return text


def _luhn(candidate: str) -> bool:
    digits = [int(c) for c in candidate if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0
