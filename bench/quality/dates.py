"""LoCoMo's session dates for the dated runs (`--dated` of bench.quality.locomo and .facts): each
memory carries the date its session was held as its `timestamp` (as an assistant's host sends mem0's
`timestamp`, or an import its times), and questions are asked the day after the last session.

A question is "dated" when it names a period the product reads (portal.domain.periods): those are
reported as a group of their own, beside the categories."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from typing import Any

from portal.domain.periods import named_period


def session_dates(conversation: dict[str, Any]) -> dict[int, datetime]:
    """Session number → when it was held ("1:56 pm on 8 May, 2023"), as UTC."""
    out = {}
    for key, value in conversation.items():
        if key.startswith("session_") and key.endswith("_date_time"):
            out[int(key.split("_")[1])] = datetime.strptime(value, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return out


def asked_at(dates: dict[int, datetime]) -> datetime:
    """The moment questions are asked: the day after the last session."""
    return max(dates.values()) + timedelta(days=1)


def names_a_period(question: str, at: datetime) -> bool:
    return named_period(question, at) is not None


def groups(rows: list[tuple[int, bool, Any]], categories: dict[int, str]) -> dict[str, list[Any]]:
    """Scores by category, the dated questions and all."""
    out = {str(c): [s for cat, _, s in rows if cat == c] for c in categories}
    out["dated"] = [s for _, dated, s in rows if dated]
    out["all"] = [s for _, _, s in rows]
    return out


def add_date_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dated", action="store_true",
                        help="memories carry their session's date; questions are asked the day after the last session")
    parser.add_argument("--date-weight", type=float, default=None, help="Options.date_weight (default: the product's)")
    parser.add_argument("--date-grace-days", type=float, default=None, help="Options.date_grace in days")
    parser.add_argument("--date-candidates", type=int, default=None, help="Options.date_candidates")


def date_options(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if args.date_weight is not None:
        out["date_weight"] = args.date_weight
    if args.date_candidates is not None:
        out["date_candidates"] = args.date_candidates
    if args.date_grace_days is not None:
        out["date_grace"] = timedelta(days=args.date_grace_days)
    return out
