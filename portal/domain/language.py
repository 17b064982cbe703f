"""Which language a text is in, for ranking its words: English or French, the portal's two
(issue 31).

A text is French only with two kinds of evidence: more of French's function words than of
English's (FRENCH_WORDS, ENGLISH_WORDS: words of one language's grammar that the other does not
use, so names and borrowed words — "Chloé", "Montréal", "crème brûlée", "déjà vu" — count for
neither), and `py3langid` (BSD-3-Clause; Lui and Baldwin's langid.py model, on numpy) restricted
to English and French at least FRENCH_FROM sure. Without the first the model is not asked: an
English sentence naming a French person stays English, as does a text with no function word at
all ("thé" alone). The model is loaded once per process (1.5 s) under a lock; asking it costs
about 30-50 µs a sentence, the words' count a few µs; nothing here keeps a text.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

ENGLISH, FRENCH = "en", "fr"
FRENCH_FROM = 0.8

# Folded, as `portal.domain.text.words` gives them ("où" is "ou"). Left out of both: words one
# language borrows from the other or shares with it ("a", "on", "me", "son", "elle", "et", "un",
# "des", "ma"), and the single letters English contractions leave ("s", "t", "d", "m").
_FRENCH = (
    "le la les du au aux de est sont suis etait ete ai avons avez ont pour avec dans sur chez depuis "
    "qui que qu quoi quand comment pourquoi quel quelle quels quelles ou je il ils elles nous vous tu "
    "mon mes ton ta tes sa ses notre nos votre vos leur leurs ce cet cette ces ne pas plus tres aussi "
    "mais donc car l j c n"
)
_ENGLISH = (
    "the and of to in is are was were be been being am my your his her its our their with for from "
    "at by this that these those it he she they we you i have has had do does did not but or what "
    "when where who whom how why which will would can could should shall about into than then there "
    "here some any all very just also an if so no yes"
)
FRENCH_WORDS = frozenset(_FRENCH.split())
ENGLISH_WORDS = frozenset(_ENGLISH.split())
_RAW_WORD = re.compile(r"[^\W_]+")

_MODEL: Any = None
_LOCK = threading.Lock()


def _model() -> Any:
    global _MODEL
    if _MODEL is None:
        with _LOCK:
            if _MODEL is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier  # why: a 4 MB model, on first use

                model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                model.set_languages([ENGLISH, FRENCH])
                _MODEL = model
    return _MODEL


def language_of(text: str, folded: Sequence[str]) -> str:
    """"fr" for a text (`folded`: its folded words) holding more French function words than
    English ones that the model is at least FRENCH_FROM sure is French, else "en"."""
    french = sum(1 for w in folded if w in FRENCH_WORDS)
    if not french:
        return ENGLISH
    # English's words are counted with their accents: French "thé" folds to "the".
    if french <= sum(1 for w in _RAW_WORD.findall(text.lower()) if w in ENGLISH_WORDS):
        return ENGLISH
    found, confidence = _model().classify(text)
    return FRENCH if found == FRENCH and confidence >= FRENCH_FROM else ENGLISH


def warm() -> None:
    """Load the model now (a server does, before it takes requests)."""
    _model()
