"""Which language a text is in, for ranking its words: English or French, the portal's two
(issue 31).

`py3langid` (BSD-3-Clause; Lui and Baldwin's langid.py model, on numpy) restricted to English and
French decides; a text is French only when it is at least FRENCH_FROM sure, so a short or mixed
text ranks as English did before. A text holding no accented letter and none of French's
commonest short words is English without asking the model (most English memories: 2 µs, not 50).
The model is loaded once per process (1.5 s) under a lock; nothing here keeps a text.
"""

from __future__ import annotations

import re
import threading
from typing import Any

ENGLISH, FRENCH = "en", "fr"
FRENCH_FROM = 0.8

# Words no English sentence is made of, that most French ones hold (folded: no accents).
_HINTS = (
    "le la les des une du au aux est et pour avec dans sur qui que pas je il elle nous vous ils elles "
    "mon ma mes son sa ses ton ta tes leur leurs ce cet cette ces ou quoi quand comment pourquoi quel "
    "quelle quels quelles aime habite travaille chez tres"
)
_FRENCH_HINTS = frozenset(_HINTS.split())
_APOSTROPHE_WORD = re.compile(r"\b[cdjlmnst]'\w", re.IGNORECASE)
_LETTERS = re.compile(r"[a-z]+")

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


def might_be_french(text: str) -> bool:
    """Whether the model needs asking: an accented letter, an elided article ("l'", "d'"...) or a
    common French word."""
    if any(ord(ch) > 127 and ch.isalpha() for ch in text):
        return True
    if _APOSTROPHE_WORD.search(text):
        return True
    return not _FRENCH_HINTS.isdisjoint(_LETTERS.findall(text.lower()))


def language_of(text: str) -> str:
    """"fr" for a text the model is at least FRENCH_FROM sure is French, else "en"."""
    if not text or not might_be_french(text):
        return ENGLISH
    found, confidence = _model().classify(text)
    return FRENCH if found == FRENCH and confidence >= FRENCH_FROM else ENGLISH


def warm() -> None:
    """Load the model now (a server does, before it takes requests)."""
    _model()
