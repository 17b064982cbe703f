"""Recall's favour for what was said in the period a query names (issue 31, portal.domain.periods):
when a memory was said, whether it was said in a period, and the ranking with those moved up. Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from portal.domain.periods import Period, named_period
from portal.domain.recall.ranking import TIE_DIGITS
from portal.domain.types import Memory


def said_at(memory: Memory) -> datetime:
    """When a memory was said: its `timestamp` (portal.domain.attributes), else when it was kept."""
    stamp = (memory.attributes or {}).get("timestamp")
    return datetime.fromtimestamp(stamp, UTC) if isinstance(stamp, int) else memory.created_at


def said_in(memory: Memory, period: Period, grace: timedelta) -> bool:
    """Whether a memory was said in `period` (or up to `grace` after), or its words name a time in
    it, read against when it was said ("last weekend")."""
    said = said_at(memory)
    try:
        if period.holds(said, grace):
            return True
    except OverflowError:  # a moment at the calendar's start, less the grace
        return False
    named = named_period(memory.text, said, nearest=True)
    return named is not None and named.meets(period)


def favour_period(ranked: Sequence[tuple[str, float, str]], memories: Mapping[str, Memory], period: Period,
                  weight: float, grace: timedelta, ceiling: float | None, keep: int) -> list[tuple[str, float, str]]:
    """The first `keep` of `ranked`, best first, each memory said in `period` moved `weight` of the
    way up to `ceiling` (the best score its ranking gives), or by `weight` of its score where the
    ranking has none (words' BM25, reciprocal ranks). The others keep theirs: nothing drops under a
    floor it passed. Scores equal to `TIE_DIGITS` decimals keep their order.

    Moving up only raises scores, so the `keep`-th score can only rise: a memory that could not
    reach it even moved is not looked at (its words are not read for a time)."""
    def moved(score: float) -> float:
        return score + weight * (ceiling - score) if ceiling is not None and score <= ceiling else score * (1 + weight)

    if not ranked:
        return []
    floor = sorted((score for _, score, _ in ranked), reverse=True)[min(keep, len(ranked)) - 1]
    scale = 10.0**TIE_DIGITS
    out = [(i, up if (up := moved(score)) >= floor and i in memories and said_in(memories[i], period, grace)
            else score, how) for i, score, how in ranked]
    return sorted(out, key=lambda r: -math.floor(r[1] * scale + 0.5))[:keep]
