"""The periods a text names (portal.domain.periods), English and French, against a fixed moment:
Thursday 4 January 2024, 13:00 UTC."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from portal.adapters.memory.store import InMemoryStore
from portal.domain.options import Options
from portal.domain.periods import Period, named_period
from portal.domain.recall.dated import favour_period
from portal.domain.types import Memory, Place
from portal.services.memory_service import MemoryService

from ..fakes.embedders import HashEmbedder

NOW = datetime(2024, 1, 4, 13, 0, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


CASES = [
    # absolute: days, months, seasons, years
    ("Who did Maria have dinner with on May 3, 2023?", day(2023, 5, 3), day(2023, 5, 4)),
    ("What movie did Joanna watch on 1 May, 2022?", day(2022, 5, 1), day(2022, 5, 2)),
    ("Where was the picture shared on December 1,2023 taken?", day(2023, 12, 1), day(2023, 12, 2)),
    ("What did they do in May,2021?", day(2021, 5, 1), day(2021, 6, 1)),
    ("What happened on 2023-07-14?", day(2023, 7, 14), day(2023, 7, 15)),
    ("What did she do on the 3rd of March?", day(2023, 3, 3), day(2023, 3, 4)),
    ("What did John attend in March 2023?", day(2023, 3, 1), day(2023, 4, 1)),
    ("Was the first half of September 2022 a good month?", day(2022, 9, 1), day(2022, 10, 1)),
    ("What state did Joanna visit in summer 2021?", day(2021, 6, 1), day(2021, 9, 1)),
    ("How many times has Melanie gone to the beach in 2023?", day(2023, 1, 1), day(2024, 1, 1)),
    ("When did Melanie go camping in June?", day(2023, 6, 1), day(2023, 7, 1)),  # the last June by now
    ("What did they do in January?", day(2024, 1, 1), day(2024, 2, 1)),  # this one, begun
    ("What did they do last January?", day(2023, 1, 1), day(2023, 2, 1)),
    ("What did they do in the winter?", day(2023, 12, 1), day(2024, 3, 1)),
    ("What did they do last summer?", day(2023, 6, 1), day(2023, 9, 1)),
    # relative: days, weeks (from Monday), months, years
    ("What did I eat yesterday?", day(2024, 1, 3), day(2024, 1, 4)),
    ("What did she do the day before yesterday?", day(2024, 1, 2), day(2024, 1, 3)),
    ("What did I do today?", day(2024, 1, 4), day(2024, 1, 5)),
    ("Where did we go last week?", day(2023, 12, 25), day(2024, 1, 1)),
    ("And the week before?", day(2023, 12, 25), day(2024, 1, 1)),
    ("What did we do last weekend?", day(2023, 12, 30), day(2024, 1, 1)),
    ("Anything this week?", day(2024, 1, 1), day(2024, 1, 8)),
    ("What happened last month?", day(2023, 12, 1), day(2024, 1, 1)),
    ("What did they see last year?", day(2023, 1, 1), day(2024, 1, 1)),
    ("What did I do the week before 3 May 2023?", day(2023, 4, 26), day(2023, 5, 3)),
    ("What did I do the day after 3 May 2023?", day(2023, 5, 4), day(2023, 5, 5)),
    ("What was shown on the Sunday before October 25, 2022?", day(2022, 10, 23), day(2022, 10, 24)),
    ("What did she do the Friday after 3 May 2023?", day(2023, 5, 5), day(2023, 5, 6)),
    ("Qu'a-t-il fait le lundi avant le 3 mai 2023 ?", day(2023, 5, 1), day(2023, 5, 2)),
    ("What did we do before 2020?", datetime(1, 1, 2, tzinfo=UTC), day(2020, 1, 1)),
    ("What changed after March 2023?", day(2023, 4, 1), day(2024, 1, 5) + timedelta(hours=13)),
    ("Where has she lived since 2019?", day(2019, 1, 1), day(2024, 1, 5) + timedelta(hours=13)),
    # French
    ("Qu'a-t-elle fait en mai ?", day(2023, 5, 1), day(2023, 6, 1)),
    ("Qu'a-t-il fait en mai 2022 ?", day(2022, 5, 1), day(2022, 6, 1)),
    ("Où était-elle le 3 mai 2023 ?", day(2023, 5, 3), day(2023, 5, 4)),
    ("Que s'est-il passé le 1er août ?", day(2023, 8, 1), day(2023, 8, 2)),
    ("Qu'a-t-elle acheté en 2023 ?", day(2023, 1, 1), day(2024, 1, 1)),
    ("Qu'a-t-il fait hier ?", day(2024, 1, 3), day(2024, 1, 4)),
    ("Et avant-hier ?", day(2024, 1, 2), day(2024, 1, 3)),
    ("Qu'a-t-on mangé aujourd’hui ?", day(2024, 1, 4), day(2024, 1, 5)),
    ("Où sommes-nous allés la semaine dernière ?", day(2023, 12, 25), day(2024, 1, 1)),
    ("Et la semaine d'avant ?", day(2023, 12, 25), day(2024, 1, 1)),
    ("Qu'a-t-elle fait le week-end dernier ?", day(2023, 12, 30), day(2024, 1, 1)),
    ("Qu'a-t-il lu le mois dernier ?", day(2023, 12, 1), day(2024, 1, 1)),
    ("Qu'a-t-elle appris l'année dernière ?", day(2023, 1, 1), day(2024, 1, 1)),
    ("Où sont-ils partis l'an dernier ?", day(2023, 1, 1), day(2024, 1, 1)),
    ("Où sont-ils allés l'été dernier ?", day(2023, 6, 1), day(2023, 9, 1)),
    ("Qu'a-t-elle fait en mai dernier ?", day(2023, 5, 1), day(2023, 6, 1)),
    ("Qu'a-t-il prévu cette semaine ?", day(2024, 1, 1), day(2024, 1, 8)),
    ("Qu'a-t-il fait ce mois-ci ?", day(2024, 1, 1), day(2024, 2, 1)),
    ("Qu'a-t-elle fait l'été 2021 ?", day(2021, 6, 1), day(2021, 9, 1)),
    ("Elle habite à Lyon depuis 2019", day(2019, 1, 1), day(2024, 1, 5) + timedelta(hours=13)),
]


@pytest.mark.parametrize(("text", "start", "end"), CASES, ids=[c[0] for c in CASES])
def test_the_period_a_text_names(text: str, start: datetime, end: datetime) -> None:
    assert named_period(text, NOW) == Period(start, end)


@pytest.mark.parametrize("text", [
    "May I ask what you like?", "This may help", "They march on Sundays", "Marching on Mars", "What did she paint?",
    "Quel thé boit-elle ?", "Who is Jun?", "Room 12 on the second floor", "Likes tea", "", "Où vit sa sœur ?",
    "Il aime les barres Mars", "Did they go on a trip after the wedding?",
])
def test_no_period_where_none_is_named(text: str) -> None:
    assert named_period(text, NOW) is None


def test_about_a_span_ago_and_rolling_spans() -> None:
    ago = named_period("Where did Caroline move from 4 years ago?", NOW)
    assert ago is not None and ago.holds(day(2020, 1, 4)) and not ago.holds(day(2021, 1, 4))
    deux = named_period("Où est-il allé il y a deux semaines ?", NOW)
    assert deux is not None and deux.holds(day(2023, 12, 21)) and not deux.holds(day(2023, 12, 28))
    recent = named_period("What did Melanie paint recently?", NOW)
    assert recent is not None and recent.holds(day(2023, 12, 20)) and not recent.holds(day(2023, 11, 20))
    last3 = named_period("What did they read in the last 3 months?", NOW)
    assert last3 is not None and last3.holds(day(2023, 10, 20)) and not last3.holds(day(2023, 9, 20))


def test_a_memory_reads_its_own_words_against_when_it_was_said() -> None:
    said = datetime(2023, 6, 9, 19, 55, tzinfo=UTC)  # a Friday
    assert named_period("Went camping last weekend", said) == Period(day(2023, 6, 3), day(2023, 6, 5))
    assert named_period("Started a new job yesterday", said) == Period(day(2023, 6, 8), day(2023, 6, 9))
    june = named_period("in June", NOW)
    assert june is not None and named_period("Went camping last weekend", said).meets(june)  # type: ignore[union-attr]


def test_a_grace_after_the_end_counts_what_is_told_later() -> None:
    may = named_period("in May", NOW)
    assert may is not None
    assert not may.holds(day(2023, 6, 3)) and may.holds(day(2023, 6, 3), grace=timedelta(days=7))
    assert not may.holds(day(2023, 4, 30), grace=timedelta(days=7))


@pytest.mark.parametrize("text", [
    "What did they do on 9999-12-31?", "the week before 1 January 0001", "in December 9999", "winter 9999",
    "10000000000 years ago", "il y a 99999999999999999999 jours", "the day after 31 December 9999",
    "in the last 99999999999 years", "on 31 February 2023", "2023-13-45", "on 0 May 2023",
])
def test_dates_past_the_calendar_name_no_period_and_raise_nothing(text: str) -> None:
    period = named_period(text, NOW)
    assert period is None or period.start < period.end



# An attacker's review: names, other words and numbers read as periods; since / before with
# relative periods; "this July" asked before it comes round.
@pytest.mark.parametrize("text", [
    "What is the name of May's dog?", "What is the address of Jan?", "I ate 2 Mars bars", "Did they march 5 miles?",
    "How is my back since the fall?", "What do I put in spring rolls?", "I walk 2000 steps a day",
    "My PIN is 1984", "Room 1905", "A 2000 euro laptop", "Il y a 3 mois de préavis", "Elle a depuis été promue",
    "What did I do the week before my wedding?",
])
def test_ordinary_words_and_numbers_name_no_period(text: str) -> None:
    assert named_period(text, NOW) is None


def test_other_words_do_not_hide_the_period_named() -> None:
    assert named_period("Il y a trois jours fériés en mai", NOW) == Period(day(2023, 5, 1), day(2023, 6, 1))


@pytest.mark.parametrize(("text", "start", "end"), [
    ("Where has she worked since last year?", day(2023, 1, 1), day(2024, 1, 5) + timedelta(hours=13)),
    ("Depuis l'année dernière ?", day(2023, 1, 1), day(2024, 1, 5) + timedelta(hours=13)),
    ("What did they do before last year?", datetime(1, 1, 2, tzinfo=UTC), day(2023, 1, 1)),
    ("Since last week?", day(2023, 12, 25), day(2024, 1, 5) + timedelta(hours=13)),
    ("What is planned this July?", day(2024, 7, 1), day(2024, 8, 1)),
    ("Where are they going this summer?", day(2024, 6, 1), day(2024, 9, 1)),
    ("What are they doing this winter?", day(2023, 12, 1), day(2024, 3, 1)),
    ("What did we do before 1950?", datetime(1, 1, 2, tzinfo=UTC), day(1950, 1, 1)),
])
def test_since_before_and_this_turn_relative_periods(text: str, start: datetime, end: datetime) -> None:
    assert named_period(text, NOW) == Period(start, end)


def test_a_naive_moment_is_taken_as_utc_and_the_calendar_end_raises_nothing() -> None:
    assert named_period("in May", NOW.replace(tzinfo=None)) == Period(day(2023, 5, 1), day(2023, 6, 1))
    end = named_period("on 9999-12-30", NOW)
    assert end is not None and end.holds(datetime(9999, 12, 31, 23, 59, tzinfo=UTC), grace=timedelta(days=7))


def _memory(memory_id: str, said: datetime, text: str = "Visited a museum") -> Memory:
    return Memory(id=memory_id, owner_id="o", scope="s", revision=1, text=text, kind="fact", importance=3,
                  created_at=said, updated_at=said)


def test_favour_moves_up_what_was_said_in_the_period_and_lowers_nothing() -> None:
    may = named_period("in May", NOW)
    assert may is not None
    memories = {"a": _memory("a", day(2023, 9, 1)), "b": _memory("b", day(2023, 5, 9)), "c": _memory("c", day(2023, 9, 2))}
    ranked = [("a", 0.7, "hybrid"), ("c", 0.6, "hybrid"), ("b", 0.5, "hybrid")]
    moved = favour_period(ranked, memories, may, 0.5, timedelta(0), 1.0, 3)
    assert [i for i, _, _ in moved] == ["b", "a", "c"] and dict((i, s) for i, s, _ in moved)["b"] == 0.75
    assert all(s >= dict((i, s0) for i, s0, _ in ranked)[i] for i, s, _ in moved)  # a floor passed stays passed
    unbounded = favour_period([("a", 9.0, "lexical"), ("b", 7.0, "lexical")], memories, may, 0.5, timedelta(0), None,
                              2)
    assert [i for i, _, _ in unbounded] == ["b", "a"]  # BM25: by half its own score
    tied = favour_period([("a", 0.5, "h"), ("c", 0.5000004, "h")], memories, may, 0.5, timedelta(0), 1.0, 2)
    assert [i for i, _, _ in tied] == ["a", "c"]  # equal to 1e-6: the order they came in


class _Reranker:
    """The rerank server's answer, by hand: the first texts most relevant, a museum of May least."""

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        return [0.03 - 0.001 * n for n in range(len(texts))]


def test_with_a_reranker_its_order_leads_and_the_period_moves_up_within_it() -> None:
    store, place = InMemoryStore(), Place("ada", "s")
    embedder = HashEmbedder()
    options = Options(reranker=_Reranker(), rerank_candidates=5, feedback_memories=0)
    service = MemoryService(store, embedder, options=options, clock=lambda: NOW)
    for n in range(12):
        service.remember(place, f"Visited museum number {n} downtown",
                         attributes={"timestamp": int((day(2023, 5, 9) if n == 3 else day(2023, 10, 2)).timestamp())})
    hits = service.recall(place, "Which museum did they visit in May?", limit=3, mark=False)
    assert hits[0].memory.text == "Visited museum number 3 downtown"
    assert all(0.0 <= h.score <= 1.0 for h in hits)


# A second review: phrases still misread, and phrases missed.
J = datetime(2024, 6, 15, 12, tzinfo=UTC)
A = datetime(2024, 4, 15, 12, tzinfo=UTC)


@pytest.mark.parametrize("text", [
    "What did I do in my last week at the old job?", "What did I study in my last year of university?",
    "What happened in the last month of my pregnancy?", "Qu'ai-je fait la semaine d'avant Noël ?",
    "l'année d'avant ma retraite", "le mois d'avant mon déménagement", "Il y a deux jours par semaine où je travaille",
    "Il y a deux semaines par an de vacances",
])
def test_a_unit_of_something_else_is_no_period(text: str) -> None:
    assert named_period(text, NOW) is None


@pytest.mark.parametrize(("text", "now", "start", "end"), [
    ("What have I done in the last year?", J, J - timedelta(days=365.25), J + timedelta(seconds=1)),
    ("Where did I work from 2019 to 2021?", NOW, day(2019, 1, 1), day(2022, 1, 1)),
    ("Il a été de 1998 à 2004 directeur de l'école", NOW, day(1998, 1, 1), day(2005, 1, 1)),
    ("Au printemps dernier, où suis-je allé ?", A, day(2023, 3, 1), day(2023, 6, 1)),
    ("What did we do this past weekend?", NOW, day(2023, 12, 30), day(2024, 1, 1)),
    ("What did she do last Monday?", NOW, day(2024, 1, 1), day(2024, 1, 2)),
    ("Qu'a-t-il fait lundi dernier ?", NOW, day(2024, 1, 1), day(2024, 1, 2)),
    ("What did they do on Saturday 3 May 2023?", NOW, day(2023, 5, 3), day(2023, 5, 4)),
    ("Que s'est-il passé samedi 3 mai ?", NOW, day(2023, 5, 3), day(2023, 5, 4)),
    ("Que s'est-il passé au mois d'août ?", NOW, day(2023, 8, 1), day(2023, 9, 1)),
    ("Qu'ai-je fait le mois de mai ?", NOW, day(2023, 5, 1), day(2023, 6, 1)),
    ("Qu'a-t-il fait cet après-midi ?", NOW, day(2024, 1, 4), day(2024, 1, 5)),
    ("What happened on 2023-07-14T10:00?", NOW, day(2023, 7, 14), day(2023, 7, 15)),
    ("Where did we go over the summer?", NOW, day(2023, 6, 1), day(2023, 9, 1)),
])
def test_more_periods_a_person_names(text: str, now: datetime, start: datetime, end: datetime) -> None:
    assert named_period(text, now) == Period(start, end)


def test_spans_counted_in_words() -> None:
    half = named_period("What happened half a year ago?", NOW)
    assert half is not None and half.holds(day(2023, 7, 5)) and not half.holds(day(2023, 1, 5))
    couple = named_period("What did we eat a couple weeks ago?", NOW)
    assert couple is not None and couple.holds(day(2023, 12, 21))
    quinze = named_period("Qu'a-t-elle dit il y a quinze jours ?", NOW)
    assert quinze == Period(day(2023, 12, 20), day(2023, 12, 21))
    since = named_period("il y a deux ans que je travaille ici", NOW)
    assert since is not None and since.holds(day(2023, 6, 1)) and since.holds(day(2022, 2, 1))
    assert named_period("Il y a un an de ça", NOW) is not None
    assert named_period("Depuis deux ans ?", NOW) == since
    lately = named_period("Qu'a-t-il lu ces derniers jours ?", NOW)
    assert lately is not None and lately.holds(day(2024, 1, 1)) and not lately.holds(day(2023, 12, 20))


def test_a_memory_reads_a_month_alone_as_the_nearest_one() -> None:
    said = datetime(2024, 1, 4, tzinfo=UTC)
    assert named_period("Going to Tokyo in March", said, nearest=True) == Period(day(2024, 3, 1), day(2024, 4, 1))
    assert named_period("Went to Paris in December", said, nearest=True) == Period(day(2023, 12, 1), day(2024, 1, 1))
    assert named_period("Went to Paris in December", said) == Period(day(2023, 12, 1), day(2024, 1, 1))
    assert named_period("What am I doing in March?", said) == Period(day(2023, 3, 1), day(2023, 4, 1))  # asked: the last


@pytest.mark.parametrize("seed", range(20))
def test_favour_reads_only_what_could_reach_the_hits_and_answers_as_if_it_read_all(seed: int) -> None:
    import random

    rng = random.Random(seed)
    may = named_period("in May", NOW)
    assert may is not None
    memories = {f"m{n}": _memory(f"m{n}", day(2023, 5 if rng.random() < 0.3 else 9, 1 + n % 28)) for n in range(40)}
    ranked = sorted(((i, rng.random(), "hybrid") for i in memories), key=lambda r: -r[1])
    for keep in (1, 3, 5, 40):
        for ceiling in (1.0, None):
            every = favour_period(ranked, memories, may, 0.5, timedelta(0), ceiling, len(ranked))
            assert favour_period(ranked, memories, may, 0.5, timedelta(0), ceiling, keep) == every[:keep]
