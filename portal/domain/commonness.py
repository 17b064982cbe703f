"""How common a ranking term is in the language, as a weight on its evidence (issue 31).

BM25 weighs a query term by how rare it is among the place's memories only. Among five memories
every word is rare, so the stem "like" of "how do they like their replies?" counted as strong
evidence for "Likes tea". Here a term is also weighed by how rare it is in the language: its Zipf
frequency (log10 of its count per billion words) in `wordfreq`'s list of the language's common
words, taking for a stem its commonest form ("like", "likes", "liked" → the Zipf of "like"), and

    weight = clamp((ZIPF_RARE - zipf) / ZIPF_SPAN, WEIGHT_FLOOR, 1)

so a word as common as "like" (Zipf 6.4) counts 0.4, "keep" (5.7) 0.58, "tea" (4.7) 0.82,
"marathon" (4.2) 0.96, and one of Zipf 4 or less, or that the list does not hold (a name, a rare
word, a number), fully. The constants were chosen on the LoCoMo dev set with the fusion's LEXICAL_FULL, both
protocols (docs/benchmarks.md, issue 31): a steeper curve (to 0.15) lost turns recall. The table is made once per
language and process from the public word list, never from a person's words (nothing here keeps
what they wrote), under a lock; 18,239 stems for English.

`wordfreq` (Apache-2.0 code; its word lists are CC BY-SA 4.0, credited in docs/benchmarks.md) is
read through `get_frequency_dict`, its "small" list: the words of frequency 1e-6 and above.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

ZIPF_RARE = 8.0
ZIPF_SPAN = 4.0
WEIGHT_FLOOR = 0.3

_TABLES: dict[str, dict[str, float]] = {}
_LOCK = threading.Lock()


def zipf_table(language: str, stem: Callable[[str], str], fold: Callable[[str], str]) -> dict[str, float]:
    """{stem: Zipf frequency of its commonest form} for `language` ("en", "fr"), made on first use."""
    table = _TABLES.get(language)
    if table is not None:
        return table
    with _LOCK:
        table = _TABLES.get(language)
        if table is None:
            from wordfreq import get_frequency_dict  # why: 30 MB of word lists, read on first ranking only

            table = {}
            for word, frequency in get_frequency_dict(language, wordlist="small").items():
                folded = fold(word)
                if not folded or not folded.replace("'", "").isalnum():
                    continue
                zipf = math.log10(frequency * 1e9)
                key = stem(folded)
                if zipf > table.get(key, -1.0):
                    table[key] = zipf
            _TABLES[language] = table
    return table


def weight_of(zipf: float | None) -> float:
    """The weight of a term of this Zipf frequency (None: not among the language's common words)."""
    if zipf is None:
        return 1.0
    return min(1.0, max(WEIGHT_FLOOR, (ZIPF_RARE - zipf) / ZIPF_SPAN))
