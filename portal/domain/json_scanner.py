"""A tolerant scanner for the JSON-ish text models send (DESIGN §7), used by `portal.domain.extraction`.

`Scanner` reads one list or object by recursive descent. It accepts raw line breaks in strings,
trailing commas and unknown escapes, and it may meet the end of the text anywhere: a container
the text ended inside comes back as a `CutList`/`CutDict` holding its whole items. Anything else
that is not JSON raises `Unreadable`.
"""

from __future__ import annotations

import re
from typing import Any

# Far deeper than any answer; it keeps "[[[[..." from exhausting the stack.
_MAX_DEPTH = 32


class Unreadable(Exception):
    """The text is not JSON-ish from this start: the scan is abandoned."""


class CutList(list[Any]):
    """A list the answer ended inside: it holds the whole items before the end."""


class CutDict(dict[str, Any]):
    """An object the answer ended inside: it holds the whole members before the end."""


_INCOMPLETE: Any = object()  # a scalar the answer ended inside; never kept
_SPACE = re.compile(r"\s*")
_PLAIN = re.compile(r'[^"\\]*')  # raw line breaks and tabs are welcome: models send them
_NUMBER = re.compile(r"[-+0-9.eE]*")
_INTEGER = re.compile(r"-?[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]*")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/", "'": "'"}
_LITERALS = {"true": True, "false": False, "null": None}


def _end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    found = pattern.match(text, pos)
    return found.end() if found else pos


def _decoded(text: str) -> str:
    """Join "\ud83d\ude00"-style pairs; a lone half cannot be stored as UTF-8, so it becomes U+FFFD."""
    text = _SURROGATE_PAIR.sub(lambda pair: pair.group().encode("utf-16", "surrogatepass").decode("utf-16"), text)
    return _LONE_SURROGATE.sub("\ufffd", text)


class Scanner:
    """Recursive descent over JSON-ish text that may stop anywhere.

    Where the text ends inside a container, the container comes back as a CutList/CutDict
    holding its whole items, and every enclosing container is cut too. Trailing commas are
    accepted; anything else that is not JSON raises Unreadable.
    """

    def __init__(self, text: str, pos: int) -> None:
        self.text, self.pos, self.depth = text, pos, 0

    def _more(self) -> bool:
        """Skip whitespace; False when the text has ended."""
        self.pos = _end(_SPACE, self.text, self.pos)
        return self.pos < len(self.text)

    def value(self) -> Any:
        if not self._more():
            return _INCOMPLETE
        ch = self.text[self.pos]
        if ch in "{[":
            if self.depth >= _MAX_DEPTH:
                raise Unreadable
            self.depth += 1
            try:
                return self._object() if ch == "{" else self._array()
            finally:
                self.depth -= 1
        if ch == '"':
            return self._string()
        if ch in "-+.0123456789":
            return self._number()
        return self._literal()

    def _array(self) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        while self._more():
            if self.text[self.pos] == "]":
                self.pos += 1
                return items
            item = self.value()
            if item is _INCOMPLETE:
                break
            items.append(item)
            if isinstance(item, CutList | CutDict) or not self._more():
                break
            if self.text[self.pos] == ",":
                self.pos += 1
            elif self.text[self.pos] != "]":
                raise Unreadable
        return CutList(items)

    def _object(self) -> dict[str, Any]:
        self.pos += 1
        members: dict[str, Any] = {}
        while self._more():
            if self.text[self.pos] == "}":
                self.pos += 1
                return members
            if self.text[self.pos] != '"':
                raise Unreadable
            key = self._string()
            if key is _INCOMPLETE or not self._more():
                break
            if self.text[self.pos] != ":":
                raise Unreadable
            self.pos += 1
            item = self.value()
            if item is _INCOMPLETE:
                break
            members[key] = item
            if isinstance(item, CutList | CutDict) or not self._more():
                break
            if self.text[self.pos] == ",":
                self.pos += 1
            elif self.text[self.pos] != "}":
                raise Unreadable
        return CutDict(members)

    def _string(self) -> Any:
        text, pos, parts = self.text, self.pos + 1, []
        while True:
            plain_end = _end(_PLAIN, text, pos)
            parts.append(text[pos:plain_end])
            pos = plain_end
            if pos >= len(text):
                return _INCOMPLETE
            if text[pos] == '"':
                self.pos = pos + 1
                return _decoded("".join(parts))
            escape = text[pos + 1 : pos + 2]
            if not escape:
                return _INCOMPLETE
            if escape != "u":
                # An unknown escape ("C:\Users") keeps its backslash: that is what the model meant.
                parts.append(_ESCAPES.get(escape, "\\" + escape))
                pos += 2
                continue
            digits = text[pos + 2 : pos + 6]
            if len(digits) == 4 and _end(_HEX, digits, 0) == 4:
                parts.append(chr(int(digits, 16)))
                pos += 6
            elif pos + 6 > len(text) and _end(_HEX, digits, 0) == len(digits):
                return _INCOMPLETE  # the text ended inside "\u12"
            else:
                parts.append("\\u")
                pos += 2

    def _number(self) -> Any:
        end = _end(_NUMBER, self.text, self.pos)
        if end >= len(self.text):
            return _INCOMPLETE  # "0.7" may have been on its way to "0.75"
        token, self.pos = self.text[self.pos : end], end
        try:
            # Past a few hundred digits int() refuses; float() gives inf, which the service clamps.
            return int(token) if _INTEGER.fullmatch(token) and len(token) < 300 else float(token)
        except ValueError:  # "1.2.3", "e"
            raise Unreadable from None

    def _literal(self) -> Any:
        rest = self.text[self.pos : self.pos + 5]
        for word, value in _LITERALS.items():
            if rest.startswith(word):
                self.pos += len(word)
                return value
            if word.startswith(rest) and self.pos + len(rest) == len(self.text):
                return _INCOMPLETE
        raise Unreadable
