"""What "forget everything about …" needs besides the rankings recall already has (issue 29, item 4;
DESIGN §15): the people a subject names, and the sealed preview a confirmation must bring back.

Names. A subject names a person by a word written with a capital ("my brother Will", "Anna") or
by the name of someone the place knows (`names_of`: the other people of the tenant). A memory
mentions that person when it holds the name's words in a row, accents and case folded, as the
name rules of writing match them ("Paul" is not in "Pauline"). A name made only of stop words
("Will", "May"...) must be written with its capital in the memory too: "I will call" is not Will.

The sealed preview. The confirmation forgets only memories the person saw, as they saw them: the
preview hands out a token binding the place, each previewed (id, revision) and an expiry, signed
with HMAC-SHA256 under the store's `words_secret`, the one secret every process of a deployment
shares (it keys the duplicate hash when text is encrypted). A token of another place, expired or
altered is refused (`invalid_preview`). A deployment without that secret signs with a fixed,
public key: a caller could then forge a token, but only for its own place and only naming ids it
gives itself — which forgetting those ids one by one (or `forget_many`) allows anyway; a token
still never reaches another place, and a memory changed since its revision was sealed is never
taken. A token holds ids and revision numbers, never a word.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from portal.domain.errors import Refused
from portal.domain.text import STOP_WORDS, fold
from portal.domain.types import Place
from portal.inputs import load_json

PREVIEW_MAX = 200  # memories one preview lists (and one confirmation may forget)
PREVIEW_VALID = timedelta(minutes=30)  # how long a preview may be confirmed
MAX_SUBJECT = 500  # characters of a subject, as of a memory
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_PUBLIC_KEY = b"memory-portal forget-matching: no words_secret"  # see the module docstring
_VERSION = "f1"


@dataclass(frozen=True, slots=True)
class Name:
    """A person a subject names: the name's folded words, and whether a memory must write it with
    a capital to mention them (a name made only of stop words)."""

    words: tuple[str, ...]
    capital: bool

    @property
    def query(self) -> str:
        """The name as a word search asks for it."""
        return " ".join(self.words)


def _tokens(text: str) -> list[tuple[str, bool]]:
    """Each word of a text, folded, with whether it was written with a capital."""
    return [(fold(t), t[:1].isupper()) for t in _TOKEN.findall(text)]


def names_in(subject: str, known: Iterable[str]) -> list[Name]:
    """The people `subject` names: every known name whose words it holds in a row, then every word
    it writes with a capital (its first word too, unless that is a stop word: "My sister Anna").
    In the subject's order, without repeats."""
    said = _tokens(subject)
    folded = [w for w, _ in said]
    found: list[tuple[str, ...]] = []
    for name in known:
        words = tuple(w for w, _ in _tokens(name))
        if words and _run_at(folded, words) is not None:
            found.append(words)
    for i, (word, capital) in enumerate(said):
        if capital and not (i == 0 and word in STOP_WORDS):
            found.append((word,))
    unique = list(dict.fromkeys(found))
    return [Name(words, all(w in STOP_WORDS for w in words)) for words in unique]


def mentions(text: str, name: Name) -> bool:
    """Whether a memory's text holds the name as whole words in a row (with its capital, when
    the name is made of stop words only)."""
    said = _tokens(text)
    folded = [w for w, _ in said]
    start = 0
    while (at := _run_at(folded, name.words, start)) is not None:
        if not name.capital or all(capital for _, capital in said[at:at + len(name.words)]):
            return True
        start = at + 1
    return False


def _run_at(haystack: list[str], needle: tuple[str, ...], start: int = 0) -> int | None:
    n = len(needle)
    for i in range(start, len(haystack) - n + 1):
        if tuple(haystack[i:i + n]) == needle:
            return i
    return None


# ---------------------------------------------------------------------------- the sealed preview


def seal(place: Place, previewed: Mapping[str, int], expires: datetime, secret: bytes | None) -> str:
    """A token for this place's preview: its (id, revision) pairs and when it expires."""
    payload = json.dumps({"x": int(expires.timestamp()), "m": [[i, r] for i, r in previewed.items()]},
                         separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    body = _b64(payload)
    return f"{_VERSION}.{body}.{_b64(_mac(place, body, secret))}"


def opened(token: object, place: Place, now: datetime, secret: bytes | None) -> dict[str, int]:
    """The previewed revisions by id a token of this place seals, or Refused `invalid_preview` when
    it is not one: another place's, expired, altered, or no token at all."""
    if not isinstance(token, str) or len(token) > 200_000 or token.count(".") != 2:
        raise Refused("invalid_preview")
    version, body, mac = token.split(".")
    # Compared as bytes: compare_digest takes no text outside ASCII, and a token is any text sent.
    if version != _VERSION or not hmac.compare_digest(_b64(_mac(place, body, secret)).encode("ascii"),
                                                      mac.encode("utf-8", "surrogatepass")):
        raise Refused("invalid_preview")
    try:
        # By the rules every JSON taken in follows (portal.inputs.load_json): no depth that exhausts
        # the stack, no number that is not finite. Signed by us, so only a deployment without a
        # secret (or a changed one) gets here with a payload we did not write.
        payload = load_json(_unb64(body))
        expires, pairs = payload["x"], payload["m"]
        if not isinstance(pairs, list):
            raise TypeError("not a list of pairs")
        previewed = {str(i): _revision(r) for i, r in pairs}
    except (ValueError, TypeError, KeyError, binascii.Error):
        raise Refused("invalid_preview") from None
    if not isinstance(expires, int) or isinstance(expires, bool) or expires <= now.timestamp():
        raise Refused("invalid_preview")
    return previewed


def _revision(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError("not a revision")
    return value


def _mac(place: Place, body: str, secret: bytes | None) -> bytes:
    # The place is signed, not carried: a token names no person, and no other place can open it.
    message = "\x00".join((_VERSION, place.owner_id, place.scope, body)).encode("utf-8", "surrogatepass")
    return hmac.new(secret or _PUBLIC_KEY, message, hashlib.sha256).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
