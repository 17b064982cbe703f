"""The kind a line of an imported file most likely has, from its words (issue 27): "Likes tea" is
a preference, not a fact.

Used where a file gives no kind (a plain list of lines, mem0's JSON). The rule is meant to be
told in one sentence and checked by eye in the import's preview, where the person can change any
line's kind before anything is kept: **the first cue word of the line decides** ("likes",
"prefers", "aime" → preference; "wants to", "plans to", "aimerait" → goal; "feels", "worried",
"inquiet" → feeling; "daughter", "friend", "sœur" → person; "birthday", "trip", "rendez-vous" →
event); a line without a cue is a fact. Words are compared folded (case and accents), whole words
only, in English and French. A cue whose kind the deployment does not have is passed over. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from .text import words

# Each cue is a run of folded words. At one place in a line, a longer cue is tried first, so
# "would like to" (a goal) wins over "like" (a preference).
CUES: dict[str, tuple[str, ...]] = {
    "goal": (
        "wants to", "want to", "wanted to", "would like to", "plans to", "plan to", "planning to", "hopes to",
        "hope to", "aims to", "aim to", "intends to", "is trying to", "trying to", "is learning", "learning to",
        "goal", "goals", "dreams of", "saving for", "training for",
        "veut", "voudrait", "aimerait", "souhaite", "prevoit", "espere", "objectif", "objectifs",
        "apprend", "reve de", "economise pour",
    ),
    "preference": (
        "likes", "like", "loves", "love", "prefers", "prefer", "enjoys", "enjoy", "dislikes", "dislike",
        "hates", "hate", "favourite", "favorite", "fond of", "cannot stand", "can't stand",
        "aime", "aimes", "adore", "adores", "prefere", "preferes", "deteste", "detestes", "apprecie",
        "favori", "favorite", "prefere", "horreur",
    ),
    "feeling": (
        "feels", "feel", "felt", "feeling", "worried", "worries", "anxious", "stressed", "afraid", "scared",
        "nervous", "excited", "frustrated", "upset", "lonely", "sad", "happy about", "proud of",
        "se sent", "inquiet", "inquiete", "s inquiete", "angoisse", "angoissee", "stresse", "stressee",
        "peur", "triste", "heureux de", "heureuse de", "fier de", "fiere de",
    ),
    "person": (
        "wife", "husband", "partner", "a son", "my son", "his son", "her son", "their son", "sons", "daughter",
        "mother", "mom", "mum", "father", "dad", "brother",
        "sister", "friend", "colleague", "boss", "child", "children", "kids", "grandmother",
        "grandfather", "aunt", "uncle", "cousin", "neighbour", "neighbor",
        "mari", "epouse", "compagne", "compagnon", "fils", "fille", "mere", "pere", "frere", "soeur", "ami",
        "amie", "collegue", "patron", "patronne", "enfant", "enfants", "grand mere", "grand pere", "tante",
        "oncle", "voisin", "voisine",
    ),
    "event": (
        "birthday", "anniversary", "appointment", "wedding", "trip", "holiday", "holidays", "vacation",
        "interview", "meeting", "went to", "visited", "attended", "moved to", "is moving",
        "anniversaire", "rendez vous", "mariage", "voyage", "vacances", "entretien", "reunion", "est alle",
        "est allee", "a visite", "a demenage", "demenage",
    ),
}
LONGEST = max(len(cue.split()) for cues in CUES.values() for cue in cues)


def _by_words() -> dict[tuple[str, ...], str]:
    found: dict[tuple[str, ...], str] = {}
    for kind, cues in CUES.items():
        for cue in cues:
            found.setdefault(tuple(words(cue)), kind)  # the first kind that lists a cue keeps it
    return found


BY_WORDS = _by_words()


def guess_kind(text: object, kinds: Sequence[str]) -> str | None:
    """The kind the first cue word of `text` names, among `kinds`; None when no cue is found (the
    caller's default kind applies) or `text` is not a string."""
    if not isinstance(text, str):
        return None
    found = words(text[:2000])
    for start in range(len(found)):
        for size in range(min(LONGEST, len(found) - start), 0, -1):
            kind = BY_WORDS.get(tuple(found[start:start + size]))
            if kind is not None and kind in kinds:
                return kind
    return None
