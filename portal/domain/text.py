"""Text handling shared by writing and ranking: cleaning model Markdown, folding, words, terms.

Folding lowers case and strips accents so "Café" and "cafe" meet; it is used for kinds, names,
duplicate detection and lexical ranking alike, so all four agree on what "the same word" means.

Ranking goes one step further: its *terms* are the folded words reduced to their stem in the
text's language (portal.domain.language: English, or French when the text is surely French;
Snowball's stemmers, in C from PyStemmer), so "painted", "painting" and "paints" all meet
"paint", and "courses", "course" meet "cours". A query is stemmed and stopped by its own
language. Nothing here keeps a word after the call that stemmed it: no cache of
stems (a process-wide cache would keep words a person erased for the life of the worker), and
PyStemmer's own cache is switched off.
Every store ranks on these same terms (the SQL stores keep them in `search_text`), so the word
ranking is the same in memory, on SQLite and on PostgreSQL. A query's stop words ("what", "did",
"my"...) are left out of the ranking unless the query holds nothing else. Duplicate detection
keeps to the words themselves: "likes tea" and "liked tea" are two memories.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import threading
import unicodedata

import Stemmer

from portal.domain.commonness import weight_of, zipf_table
from portal.domain.language import ENGLISH, FRENCH, language_of
from portal.domain.language import warm as warm_language

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
    if text.isascii():  # nothing to decompose: the same, three times faster
        return text.lower()
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


_STEMMERS = threading.local()

# English words too common to tell memories apart: left out of a query's ranking terms (the
# stored terms keep them, so a query made only of them still finds its memories). Contraction
# tails ("m", "ve", "ll"...) are here because the word pattern splits "I'm" into "i" and "m".
STOP_WORDS = frozenset(
    {
        "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as",
        "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can",
        "could", "d", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from",
        "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself",
        "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "ll", "m", "me", "more",
        "most", "my", "myself", "no", "nor", "not", "now", "o", "of", "off", "on", "once", "only", "or",
        "other", "our", "ours", "ourselves", "out", "over", "own", "re", "s", "same", "she", "should", "so",
        "some", "such", "t", "than", "that", "the", "their", "theirs", "them", "themselves", "then",
        "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "ve",
        "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why",
        "will", "with", "would", "you", "your", "yours", "yourself", "yourselves",
    }
)

# French ones, folded as words are ("été" is "ete"), with the question words and the elided
# pronouns' letters ("l'", "qu'"...), which the word pattern splits off.
_FRENCH_STOPS = """a ai aie aient aies ait as au aura aurai auraient aurais aurait auras aurez auriez aurions
    aurons auront aux avaient avais avait avec avez aviez avions avons ayant ayez ayons c ce ceci cela
    ces cet cette d dans de des du elle elles en es est et etaient etais etait etant ete etee etees etes
    etiez etions eu eue eues eurent eus eusse eussent eusses eussiez eussions eut eux fumes furent fus
    fusse fussent fusses fussiez fussions fut il ils j je l la le les leur leurs lui m ma mais me meme
    mes moi mon n ne nos notre nous on ont ou par pas pour qu que quel quelle quelles quels qui s sa
    sans se sera serai seraient serais serait seras serez seriez serions serons seront ses si soi
    soient sois soit sommes son sont soyez soyons suis sur t ta te tes toi ton tu un une vos votre
    vous y quoi quand comment pourquoi combien"""
STOP_WORDS_FR = frozenset(_FRENCH_STOPS.split())
STEMMERS = {ENGLISH: "english", FRENCH: "french"}


def stemmer(language: str = ENGLISH) -> Stemmer.Stemmer:
    """This thread's stemmer for `language` ("en", "fr"; a stemmer keeps state while it works:
    one per thread and language), with its word cache off."""
    found: Stemmer.Stemmer | None = getattr(_STEMMERS, language, None)
    if found is None:
        found = Stemmer.Stemmer(STEMMERS[language])
        found.maxCacheSize = 0
        setattr(_STEMMERS, language, found)
    return found


def stem(word: str, language: str = ENGLISH) -> str:
    """The stem of one folded word in `language` ("painting" → "paint"); a word with digits or
    signs in it ("2023", "c#", "mp3") is kept whole."""
    if not word.isalpha():
        return word
    return str(stemmer(language).stemWord(word))


def text_language(text: str) -> str:
    """The language a text is ranked in ("en", "fr": portal.domain.language)."""
    return language_of(text, words(text))


def terms(text: str) -> list[str]:
    """The ranking terms of a text, in order: its folded words, stemmed in its language."""
    found = words(text)
    language = language_of(text, found)
    return [stem(w, language) for w in found]


MAX_QUERY_TERMS = 32


def weighted_query_terms(query: str) -> tuple[list[str], list[float]]:
    """The terms a query is ranked by, without repeats: its words less its language's stop words,
    stemmed in its language (all of its words when it holds nothing but stop words); the first
    MAX_QUERY_TERMS of them, in every store alike (a database's full-text query stays bounded).
    With each, how much it counts by how common it is in that language (1 for a rare word, down
    to 0.3 for the commonest: portal.domain.commonness), which multiplies its BM25 idf. The
    query's language is decided once for both."""
    found = words(query)
    language = language_of(query, found)
    stops = STOP_WORDS_FR if language == FRENCH else STOP_WORDS
    kept = [w for w in found if w not in stops] or found
    wanted = list(dict.fromkeys(stem(w, language) for w in kept))[:MAX_QUERY_TERMS]
    table = _zipf(language)
    return wanted, [weight_of(table.get(term)) for term in wanted]


def query_terms(query: str) -> list[str]:
    """The terms a query is ranked by (`weighted_query_terms`, without the weights)."""
    return weighted_query_terms(query)[0]


def _zipf(language: str) -> dict[str, float]:
    return zipf_table(language, lambda w: stem(w, language), fold)


def warm_ranking() -> None:
    """Make now what ranking words makes on first use: each language's table of how common its
    words are, and the language model (a server does, before it takes requests)."""
    for language in STEMMERS:
        _zipf(language)
    warm_language()


def search_text(text: str) -> str:
    """What the database's full-text index reads: the text's ranking terms joined by spaces."""
    return " ".join(terms(text))



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
