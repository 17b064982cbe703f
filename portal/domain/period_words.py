"""The words and patterns `portal.domain.periods` reads periods with, English and French, on
folded text (lower case, no accents): month, season, weekday and number names, units, and the rules
tried in order, each with the kinds of words it needs (`kinds`). Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable

_EN_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
              "november", "december"]
_FR_MONTHS = ["janvier", "fevrier", "mars", "avril", "mai", "juin", "juillet", "aout", "septembre", "octobre",
              "novembre", "decembre"]
_SHORT = {"jan": 1, "feb": 2, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11,
          "dec": 12, "janv": 1, "fevr": 2, "juil": 7}
MONTHS = {**{m: n for n, m in enumerate(_EN_MONTHS, 1)}, **{m: n for n, m in enumerate(_FR_MONTHS, 1)}, **_SHORT}
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12, "printemps": 3, "ete": 6, "automne": 9,
           "hiver": 12}  # the month each begins (meteorological, northern hemisphere)
NUMBERS: dict[str, float] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "few": 3, "a few": 3, "couple of": 2, "a couple of": 2, "a couple": 2, "half a": 0.5, "un": 1, "une": 1,
    "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "sept": 7, "huit": 8, "neuf": 9, "dix": 10, "quelques": 3,
    "quinze": 15, "vingt": 20, "trente": 30}
UNITS = {"day": "day", "days": "day", "jour": "day", "jours": "day", "week": "week", "weeks": "week",
          "semaine": "week", "semaines": "week", "month": "month", "months": "month", "mois": "month",
          "year": "year", "years": "year", "an": "year", "ans": "year", "annee": "year", "annees": "year",
          "weekend": "weekend", "week-end": "weekend"}


def _alt(words: Iterable[str]) -> str:
    return "|".join(sorted(map(re.escape, words), key=len, reverse=True))


_M, _S, _N = _alt(MONTHS), _alt(SEASONS), _alt(NUMBERS)
WEEKDAYS = {d: n % 7 for n, d in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                              "sunday", "lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi",
                                              "dimanche"])}
_WEEKDAY = _alt(WEEKDAYS)
THIS = ("this", "current", "cette", "ce", "cet")
_ON = rf"(?:on|le|the|du|au|since|depuis|before|after|avant|apres|until|jusqu'au|{_WEEKDAY}),?"
_EN_M, _FR_M = _alt([*_EN_MONTHS, *_SHORT]), _alt(_FR_MONTHS)
_ORD = r"(?:st|nd|rd|th|er)?"


_LAST = r"(?<!\bmy\s)(?<!\bhis\s)(?<!\bher\s)(?<!\bour\s)(?<!\byour\s)(?<!\btheir\s)(?<!\bthe\s)" \
        r"(?P<rel>last|this\s+past|this|previous|current)"
_NOT_OF = r"(?!\s+(?:of|at|in|before|de|d')\b)"
_FR_LAST = r"(?P<rel>derniere?|passee?|precedente?|d'avant(?=\s*(?:[?.!,;]|$)))"
RULES: list[tuple[re.Pattern[str], str]] = [(re.compile(p), name) for p, name in [
    (r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})(?!\d)", "date"),
    (r"\b(?:from|between|de|entre)\s+(?P<y>(?:19|20)\d{2})\s*(?:to|and|until|till|through|-|a|et|jusqu'en)\s*"
     r"(?P<y2>(?:19|20)\d{2})\b", "years"),
    # a day: with its year, or after "on", "le"... or with an ordinal ("2 Mars bars", "march 5 miles" are none)
    (rf"\b(?P<d>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<m>{_M})\.?(?:\s*,\s*|\s+)(?P<y>\d{{4}})\b", "date"),
    (rf"\b(?P<m>{_M})\.?\s+(?P<d>\d{{1,2}}){_ORD}(?:\s*,\s*|\s+)(?P<y>\d{{4}})\b", "date"),
    (rf"(?:\b{_ON}\s+|\b(?=\d{{1,2}}(?:st|nd|rd|th|er)\b))(?:the\s+)?(?P<d>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<m>{_M})\b",
     "date"),
    (rf"\b{_ON}\s+(?P<m>{_M})\.?\s+(?P<d>\d{{1,2}}){_ORD}\b(?!:)|\b(?P<m2>{_M})\.?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)\b",
     "date"),
    (rf"\b(?P<m>{_M})\.?(?:\s*,\s*|\s+)(?:of\s+|de\s+)?(?P<y>\d{{4}})\b", "month"),
    (rf"\b(?P<s>{_S})\s+(?:of\s+|de\s+|d')?(?P<y>\d{{4}})\b", "season"),
    (r"\b(?:the\s+)?day\s+before\s+yesterday\b|\bavant-hier\b", "day2"),
    (r"\b(?:yesterday|last\s+night|hier)\b", "day1"),
    (r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening)|aujourd'hui|ce\s+(?:soir|matin)|cet\s+apres-midi)\b",
     "day0"),
    (rf"\blast\s+(?P<w>{_WEEKDAY})\b|\b(?P<w2>{_WEEKDAY})\s+dernier\b", "weekday"),
    (rf"\b(?P<n>\d+|{_N})\s+(?P<u>days?|weeks?|months?|years?)\s+ago\b", "ago"),
    (rf"\b(?:il\s+y\s+a\s+(?P<n>\d+|{_N})\s+(?P<u>jours?|semaines?|mois|ans?|annees?)\s+que|depuis\s+(?P<n2>\d+|{_N})"
     r"\s+(?P<u2>jours|semaines|mois|ans|annees))\b", "rolling"),
    (rf"\bil\s+y\s+a\s+(?P<n>\d+|{_N})\s+(?P<u>jours?|semaines?|mois|ans?|annees?)\b"
     r"(?!\s*(?:d'|de\b(?!\s+(?:ca|cela)\b)|du\b|des\b|feri|ouvr|par\b))", "ago"),
    (rf"\b(?:past|last)\s+(?P<n>\d+|{_N})\s+(?P<u>days|weeks|months|years)\b", "rolling"),
    (rf"\b(?:les|ces)\s+(?P<n>\d+|{_N})\s+(?:derni(?:er|ere)s)\s+(?P<u>jours|semaines|mois|ans|annees)\b", "rolling"),
    (rf"\bthe\s+past\s+(?P<u>day|week|month|year)\b|\b(?:in|over|during|within)\s+the\s+last\s+"
     rf"(?P<u2>day|week|month|year)\b{_NOT_OF}", "rolling"),
    (r"\bces\s+derni(?:er|ere)s\s+(?P<u>jours|semaines|mois)\b", "lately"),
    (rf"\b{_LAST}\s+(?P<u>week-end|weekend|week|month|year)\b{_NOT_OF}", "relative"),
    (r"\b(?:the\s+)?(?P<u>week|month|year|weekend)\s+before\s*(?=[?.!,;]|$|that\b|then\b)", "before"),
    (rf"\b(?P<u>la\s+semaine|le\s+week-?end|le\s+mois|l'annee|l'an)\s+{_FR_LAST}\b", "relative"),
    (r"\b(?P<rel>cette|ce|cet)\s+(?P<u>semaine|week-?end|mois(?:-ci)?|annee)\b", "relative"),
    (rf"\b{_LAST}\s+(?P<s>{_S})\b{_NOT_OF}", "season_rel"),
    (rf"\b(?:l'|le\s+|au\s+|en\s+)(?P<s>{_S})\s+{_FR_LAST}\b", "season_rel"),
    (rf"\b(?P<rel>cet|ce)\s+(?P<s>{_S})\b", "season_rel"),
    (rf"\b(?P<rel>last|this)\s+(?P<m>{_M})\b(?<!\bthis may){_NOT_OF}", "month_rel"),
    (rf"\ben\s+(?P<m>{_M})\s+(?P<rel>dernier)\b", "month_rel"),
    (rf"\b(?:in|during|early|late|mid|throughout|since|until|before|after)[\s-]+(?:the\s+)?(?P<m>{_EN_M})\b(?!')",
     "month_in"),
    (rf"\b(?:en\s+|(?:au|le)\s+mois\s+(?:d'|de\s+)|(?:debut|fin|mi|depuis|avant|apres)[\s-]+)(?P<m>{_FR_M})\b",
     "month_in"),
    (rf"\b(?:in|during|over)\s+(?:the\s+)?(?P<s>{_S})\b(?!\s+(?:rolls?|breaks?|water|onions?|cleaning|collection))",
     "season_in"),
    (r"\b(?:en|depuis\s+l'|pendant\s+l'|a\s+l')(?P<s>ete|hiver|automne)\b|\bau\s+(?P<s2>printemps)\b", "season_in"),
    # a year after a word that makes it one ("2000 steps", "PIN 1984" are none)
    (r"\b(?:in|during|since|before|after|until|till|from|year|en|depuis|avant|apres|jusqu'en|pendant|annee)\s+"
     r"(?:the\s+year\s+|l'annee\s+)?(?P<y>(?:19|20)\d{2})\b(?![/.:-]?\d)", "year"),
    (r"\b(?:recently|lately|these\s+days|recemment|dernierement|ces\s+derniers\s+temps)\b", "recent"),
]]
# What each rule needs among a text's words (a digit, a month's name...): most texts have none of
# them and are done with at once; the others try only the rules they can meet.
_KINDS = {
    "month": frozenset(MONTHS), "season": frozenset(SEASONS), "weekday": frozenset(WEEKDAYS),
    "unit": frozenset(("day", "days", "week", "weeks", "weekend", "weekends", "month", "months", "year", "years",
                       "jour", "jours", "semaine", "semaines", "mois", "ans", "annee", "annees")),
    "day": frozenset(("yesterday", "today", "tonight", "night", "morning", "afternoon", "evening", "hier", "aujourd",
                      "soir", "matin", "midi")),
    "recent": frozenset(("recently", "lately", "days", "recemment", "dernierement", "temps")),
}
NEEDS = {"date": {"digit"}, "years": {"digit"}, "year": {"digit"}, "month": {"digit", "month"},
          "season": {"digit", "season"}, "day0": {"day"}, "day1": {"day"}, "day2": {"day"}, "weekday": {"weekday"},
          "month_rel": {"month"}, "month_in": {"month"}, "season_rel": {"season"}, "season_in": {"season"},
          "recent": {"recent"}}  # the others: "unit"
_WORDS = re.compile(r"[^\W_]+")
_DIGIT = re.compile(r"\d")
_AN = re.compile(r"\b(?:l'|un\s|1\s)an\b")  # "l'an dernier", "il y a un an" (not English's "an")


def kinds(folded: str) -> set[str]:
    words = set(_WORDS.findall(folded))
    found = {kind for kind, names in _KINDS.items() if not names.isdisjoint(words)}
    if _DIGIT.search(folded):
        found.add("digit")
    if "an" in words and _AN.search(folded):
        found.add("unit")
    return found


UNIT_FR = {"la semaine": "week", "le week-end": "weekend", "le weekend": "weekend", "le mois": "month",
            "l'annee": "year", "l'an": "year", "semaine": "week", "week-end": "weekend", "weekend": "weekend",
            "mois": "month", "mois-ci": "month", "annee": "year"}
SPACES = re.compile(r"\s+")
BEFORE = re.compile(r"\b(?:before|until|till|avant|jusqu'(?:a|au|en))\s+(?:the\s+|le\s+)?$")
AFTER = re.compile(r"\b(?P<w>after|since|apres|depuis)\s+(?:the\s+|le\s+)?$")
SHIFT = re.compile(rf"\b(?:the\s+|la\s+|le\s+)?(?P<u>day|week|month|semaine|jour|mois|{_alt(WEEKDAYS)})\s+"
                    r"(?P<dir>before|after|avant|apres|precedant|suivant)\s+(?:the\s+|le\s+)?$")
