"""When a text says when (issue 31): the period a question names — "in May", "last year", "on 3 May
2023", "the week before", "en 2023", "la semaine dernière", "il y a deux ans" — in English and
French, as a half-open span of UTC time decided against the moment it is said.

Recall favours the memories said in the period a query names (portal.services.recall); a memory's
own words are read the same way, against when it was said ("went camping last weekend", said on
9 June, names 3–4 June). One grammar of regular expressions over the folded text, most specific
first (portal.domain.period_words); nothing is looked up. `dateparser` was tried first: it answers points, not periods ("in May"
is one day of May), and its search finds dates in "may" and "second". Weeks start on Monday;
seasons are the northern hemisphere's meteorological ones; times are UTC (a person has no time
zone here). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .period_words import (
    AFTER,
    BEFORE,
    MONTHS,
    NEEDS,
    NUMBERS,
    RULES,
    SEASONS,
    SHIFT,
    SPACES,
    THIS,
    UNIT_FR,
    UNITS,
    WEEKDAYS,
    kinds,
)
from .text import fold

RECENT = timedelta(days=30)  # "recently", "ces derniers temps"
_LATELY = {"jours": timedelta(days=7), "semaines": timedelta(days=30), "mois": timedelta(days=91)}
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)  # "before ...": from the calendar's start


@dataclass(frozen=True, slots=True)
class Period:
    """[start, end) in UTC."""

    start: datetime
    end: datetime

    def holds(self, moment: datetime, grace: timedelta = timedelta(0)) -> bool:
        """Whether `moment` falls in the period, or at most `grace` after its end (a thing is told
        after it happens)."""
        return self.start <= moment and (moment < self.end or moment - grace < self.end)

    def meets(self, other: Period) -> bool:
        return self.start < other.end and other.start < self.end


def _day(y: int, m: int, d: int) -> Period | None:
    try:
        start = datetime(y, m, d, tzinfo=UTC)
    except ValueError:
        return None
    return Period(start, start + timedelta(days=1))


def _months(y: int, m: int, count: int = 1) -> Period:
    end_y, end_m = divmod(m - 1 + count, 12)
    return Period(datetime(y, m, 1, tzinfo=UTC), datetime(y + end_y, end_m + 1, 1, tzinfo=UTC))


def _year(y: int) -> Period:
    return _months(y, 1, 12)


def _latest_month(now: datetime, m: int, rel: str | None = None) -> Period:
    """The month `m` that began last by `now`; "last": not the current one; "this": this year's."""
    if rel in THIS:
        return _months(now.year, m)
    y = now.year if (m < now.month or (m == now.month and rel is None)) else now.year - 1
    return _months(y, m)


def _latest_season(now: datetime, first: int, rel: str | None = None) -> Period:
    """The season beginning in month `first` that began last by `now`; "last": not the current
    one; "this": the current one, else this year's (still to come)."""
    seasons = [_months(y, first, 3) for y in range(now.year + 1, now.year - 3, -1)]  # newest first
    current = next((season for season in seasons if season.holds(now)), None)
    if rel in THIS:
        return current or _months(now.year, first, 3)
    return next(season for season in seasons if season.start <= now and (rel is None or season is not current))


def _unit(now: datetime, unit: str, back: int) -> Period:
    """The calendar day, week (from Monday), weekend, month or year `back` of them before now's."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "day":
        start = today - timedelta(days=back)
        return Period(start, start + timedelta(days=1))
    if unit in ("week", "weekend"):
        monday = today - timedelta(days=today.weekday() + 7 * back)
        return Period(monday + timedelta(days=5), monday + timedelta(days=7)) if unit == "weekend" else Period(
            monday, monday + timedelta(days=7))
    if unit == "month":
        months = now.year * 12 + now.month - 1 - back
        return _months(months // 12, months % 12 + 1)
    return _year(now.year - back)


_SPANS = {"day": timedelta(days=1), "week": timedelta(days=7), "weekend": timedelta(days=7),
          "month": timedelta(days=30.44), "year": timedelta(days=365.25)}


def _ago(now: datetime, count: float, unit: str) -> Period:
    """About `count` units before now: a window one unit wide (less for less than one) around that
    moment; the day for days."""
    if unit == "day":
        return _unit(now, "day", round(count))
    middle, width = now - _SPANS[unit] * count, _SPANS[unit] * min(1.0, count)
    return Period(middle - width / 2, middle + width / 2)


def _rolling(now: datetime, count: float, unit: str) -> Period:
    return Period(now - _SPANS[unit] * count, now + timedelta(seconds=1))


def _count(word: str) -> float:
    return int(word) if word.isdigit() else NUMBERS.get(word, 1)


def _first_year(m: int, d: int, now: datetime) -> int:
    """A day named without its year: the last one by now."""
    return now.year if (m, d) <= (now.month, now.day) else now.year - 1


# Each rule: a pattern on the folded text, and what its match names against `now`; tried in order.
# "last week", not "my last week at the old job" nor "the last week of August"
def named_period(text: str, now: datetime, nearest: bool = False) -> Period | None:
    """The first period `text` names, decided against `now` (an aware moment), or None. A month,
    season or day named alone is the last one by `now` (a question: "what did I do in March?"),
    or with `nearest` the one nearest to it (a memory said in January: "going to Tokyo in March")."""
    return _find(_folded(text), now, nearest)


def _folded(text: str) -> str:
    return SPACES.sub(" ", fold(text).replace("\u2019", "'"))


def _find(folded: str, now: datetime, nearest: bool) -> Period | None:
    """The first period named in folded text, as the words just before it turn it ("since May")."""
    present = kinds(folded)
    if not present:
        return None
    now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    for pattern, name in RULES:
        if not NEEDS.get(name, {"unit"}) <= present:
            continue
        found = pattern.search(folded)
        if found is None:
            continue
        try:
            period = _period(name, found, now, nearest)
            if period is not None:  # the words before what names it: "since" in "since May" too
                cores = [found.start(k) for k in ("d", "m", "s", "y", "d2", "m2", "s2")
                         if found.groupdict().get(k) is not None]
                return _modified(period, folded[:min(cores, default=found.start())], name, now)
        except (ValueError, OverflowError):  # past the calendar's ends ("9999-12-31", "10000000 years ago")
            continue
    return None


def _period(name: str, found: re.Match[str], now: datetime, nearest: bool) -> Period | None:  # noqa: C901, PLR0911, PLR0912
    g = {k: v for k, v in found.groupdict().items() if v is not None}
    if name == "date":
        named, d = g.get("m") or g["m2"], int(g.get("d") or g["d2"])
        m = int(named) if named.isdigit() else MONTHS[named]
        if not 1 <= m <= 12:
            return None
        if "y" in g:
            return _day(int(g["y"]), m, d)
        return _closest(now, lambda y: _day(y, m, d)) if nearest else _day(_first_year(m, d, now), m, d)
    if name == "years":  # "from 2019 to 2021"
        return Period(_year(int(g["y"])).start, _year(int(g["y2"])).end) if g["y2"] >= g["y"] else None
    if name in ("month", "season", "year"):
        first, count = (MONTHS[g["m"]], 1) if name == "month" else (SEASONS[g["s"]], 3) if name == "season" else (1, 12)
        return _months(int(g["y"]), first, count)
    if name.startswith("day"):
        return _unit(now, "day", int(name[3]))
    if name == "weekday":
        today = _unit(now, "day", 0).start
        back = (today.weekday() - WEEKDAYS[g.get("w") or g["w2"]]) % 7 or 7
        return Period(today - timedelta(days=back), today - timedelta(days=back - 1))
    if name == "ago":
        return _ago(now, _count(g["n"]), UNITS[g["u"]])
    if name == "rolling":
        return _rolling(now, _count(g.get("n") or g.get("n2") or "1"), UNITS[g.get("u") or g["u2"]])
    if name == "lately":
        return Period(now - _LATELY[g["u"]], now + timedelta(seconds=1))
    if name in ("relative", "before"):
        unit = UNITS.get(g["u"]) or UNIT_FR[g["u"]]
        return _unit(now, unit, 0 if g.get("rel") in THIS else 1)
    if name in ("season_rel", "season_in"):
        first = SEASONS[g.get("s") or g["s2"]]
        if nearest and "rel" not in g:
            return _closest(now, lambda y: _months(y, first, 3))
        return _latest_season(now, first, g.get("rel"))
    if name in ("month_rel", "month_in"):
        if nearest and "rel" not in g:
            return _closest(now, lambda y: _months(y, MONTHS[g["m"]]))
        return _latest_month(now, MONTHS[g["m"]], g.get("rel"))
    return Period(now - RECENT, now + timedelta(seconds=1))  # recent


def _closest(now: datetime, make: Callable[[int], Period | None]) -> Period | None:
    """Of the periods `make(year)` for the years around now's, the one whose middle is nearest."""
    found = [p for y in (now.year - 1, now.year, now.year + 1) if (p := make(y)) is not None]
    return min(found, key=lambda p: abs(p.start + (p.end - p.start) / 2 - now), default=None)


def _modified(period: Period, before: str, name: str, now: datetime) -> Period:
    """The period as the words just before it turn it: "the week before 3 May", "the Sunday before
    25 October", "before 2020", "since May"."""
    if name in ("rolling", "recent"):
        return period
    shift = SHIFT.search(before)
    if shift is not None and shift["u"] in WEEKDAYS:  # "the Sunday before 25 October": that day
        back = shift["dir"] in ("before", "avant", "precedant")
        edge = period.start - timedelta(days=1) if back else period.end
        gap = (edge.weekday() - WEEKDAYS[shift["u"]]) % 7 if back else (WEEKDAYS[shift["u"]] - edge.weekday()) % 7
        day = edge - timedelta(days=gap) if back else edge + timedelta(days=gap)
        return Period(day, day + timedelta(days=1))
    if shift is not None:
        span = _SPANS[UNITS[shift["u"]]]
        if shift["dir"] in ("before", "avant", "precedant"):
            return Period(period.start - span, period.start)
        return Period(period.end, period.end + span)
    if BEFORE.search(before) is not None:
        return Period(EARLIEST, period.start)
    if (later := AFTER.search(before)) is not None:
        start = period.start if later["w"] in ("since", "depuis") else period.end
        return Period(start, max(now, start) + timedelta(days=1))
    return period
