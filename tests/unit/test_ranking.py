"""Ranking pieces (DESIGN §5): ranking terms (folded, stemmed, a query's stop words left out),
relative score fusion, and the meaning ranking's centering and feedback, checked through recall."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from portal.domain.options import Options
from portal.domain.recall.ranking import LEXICAL_FULL, bm25_top, fuse, fuse_scores
from portal.domain.text import query_terms, search_text, terms, words_key

from .conftest import remember_ok


def test_terms_are_folded_stemmed_words():
    assert terms("Painted two SUNSETS at the Café") == ["paint", "two", "sunset", "at", "the", "cafe"]
    assert terms("painting paints painted") == ["paint"] * 3
    # words with digits or signs are kept whole
    assert terms("C# in 2023, mp3s") == ["c#", "in", "2023", "mp3s"]
    assert search_text("Painted two sunsets") == "paint two sunset"


def test_a_querys_stop_words_are_left_out_unless_nothing_else_is_left():
    assert query_terms("What did Caroline paint for the show?") == ["carolin", "paint", "show"]
    assert query_terms("who is it") == ["who", "is", "it"]
    assert query_terms("tea tea Tea") == ["tea"]
    assert query_terms("") == []


def test_duplicates_are_still_told_by_words_not_stems():
    assert words_key("Likes tea") == words_key("likes TEA!")
    assert words_key("Likes tea") != words_key("Liked tea")


def test_bm25_meets_other_forms_and_weighs_rare_terms_more():
    docs = [("a", "Caroline went to the support group"), ("b", "Caroline painted a sunset"), ("c", "Caroline likes tea")]
    found = bm25_top("When did Caroline paint?", docs, 5)
    # "paint" is in one memory, "caroline" in all three; then the shorter memory is the closer match
    assert [i for i, _ in found] == ["b", "c", "a"]
    assert found[0][1] > 2 * found[1][1] and found[1][1] > found[2][1] > 0


def test_relative_fusion_scales_each_ranking_and_weighs_it():
    fused = fuse_scores(
        [("vector", [("a", 0.9), ("b", 0.5), ("c", 0.1)], 0.4), ("lexical", [("c", 12.0), ("d", 2.0)], 0.6)], 10
    )
    assert [(i, round(s, 6), found) for i, s, found in fused] == [
        ("c", 0.6, {"vector", "lexical"}), ("a", 0.4, {"vector"}), ("b", 0.2, {"vector"}), ("d", 0.0, {"lexical"}),
    ]
    # a lone candidate, or candidates all equal, are the ranking's best: fully by meaning, and by
    # words as far as their BM25 score says (1.0 of the LEXICAL_FULL that counts fully)
    alone = fuse_scores([("vector", [("a", 0.3)], 0.4), ("lexical", [("c", 1.0), ("b", 1.0)], 0.6)], 10)
    assert [(i, found) for i, _, found in alone] == [("a", {"vector"}), ("b", {"lexical"}), ("c", {"lexical"})]
    assert [s for _, s, _ in alone] == pytest.approx([0.4, 0.6 / LEXICAL_FULL, 0.6 / LEXICAL_FULL])
    assert fuse_scores([("vector", [], 1.0)], 5) == []
    assert len(fuse_scores([("vector", [("a", 1.0), ("b", 0.5)], 1.0)], 1)) == 1


def test_one_weak_word_match_is_not_made_a_full_one():
    """Five memories, "how do they like their replies?": the only word in common with any of them
    is the stem "like" of "Likes tea", a weak match (BM25 1.39 among five), while by meaning
    "Prefers short answers" is far ahead (MiniLM cosines). The answer about replies comes first."""
    meaning = [("short", 0.32), ("tea", 0.14), ("nurse", 0.05), ("cat", 0.03), ("race", 0.01)]
    fused = fuse_scores([("vector", meaning, 0.45), ("lexical", [("tea", 1.39)], 0.55)], 5)
    assert [i for i, _, _ in fused][:2] == ["short", "tea"]
    assert fused[0][1] == pytest.approx(0.45)
    assert fused[1][1] == pytest.approx(0.45 * (1 - 0.18 / 0.31) + 0.55 * 1.39 / LEXICAL_FULL)
    # a strong word match still counts fully, and still wins
    assert fuse_scores([("vector", meaning, 0.45), ("lexical", [("tea", 6.0)], 0.55)], 1)[0][0] == "tea"


def test_cosines_a_rounding_error_apart_stay_equal_and_fall_by_id():
    fused = fuse_scores([("vector", [("b", 0.5 + 2.2e-8), ("a", 0.5), ("c", 0.2)], 1.0)], 3)
    assert [i for i, _, _ in fused] == ["a", "b", "c"]
    assert fused[0][1] == pytest.approx(fused[1][1], abs=1e-6) and fused[2][1] == pytest.approx(0.0, abs=1e-6)
    # closer than the span that counts (0.1 of cosine), candidates are not stretched to 1 and 0
    near = fuse_scores([("vector", [("x", 0.52), ("y", 0.50)], 1.0)], 2)
    assert [round(s, 6) for _, s, _ in near] == [1.0, 0.8]
    # reciprocal ranks too: equal sums by id
    assert [i for i, _, _ in fuse([("vector", [("b", 0.9)], 1.0), ("lexical", [("a", 2.0)], 1.0)], 2)] == ["a", "b"]


def test_reciprocal_rank_fusion_stays_an_option(make_service, place):
    assert fuse([("vector", [("a", 0.9)], 1.0), ("lexical", [("a", 3.0)], 1.0)], 5) == [
        ("a", 2 / 61, {"vector", "lexical"})
    ]
    service = make_service(options=Options(fusion="rrf", vector_weight=1.0, lexical_weight=1.0))
    tea = remember_ok(service, place, "Drinks green tea at breakfast")
    remember_ok(service, place, "Works as a nurse in Lyon")
    assert service.recall(place, "green tea")[0].memory.id == tea.id


class TableEmbedder:
    """Vectors given by hand: the texts a test remembers and recalls, nothing else."""

    model_id = "table-4"

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self.table = {text: np.asarray(v, dtype=np.float32) for text, v in table.items()}

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        return np.stack([self.table[t] for t in texts]), self.model_id


# Four memories alike (a common direction e0, a little e2) and one that stands apart (e1). The
# question leans on e0: by plain cosine a typical memory comes first (0.89 against 0.75), but what
# all the memories share says little; taking their mean direction out puts the distinct one first.
TYPICAL = [f"typical {n}" for n in range(4)]
CENTERING = {**{t: (1.0, 0.0, 0.3, 0.0) for t in TYPICAL}, "distinct": (0.5, 1.0, 0.0, 0.0), "question": (1.0, 0.4, 0.0, 0.0)}


@pytest.fixture
def by_meaning(make_service, place):
    def build(**options):
        options.setdefault("lexical_weight", 0.0)
        return make_service(embedder=TableEmbedder(CENTERING), options=Options(**options))

    return build


def test_centering_weighs_what_sets_a_memory_apart(by_meaning, place):
    by_meaning().remember_many(place, [*TYPICAL, "distinct"], on_duplicate="keep")
    plain = by_meaning(meaning_centering=0.0, feedback_memories=0).recall(place, "question", limit=5)
    assert plain[0].memory.text in TYPICAL
    centered = by_meaning(meaning_centering=0.7, feedback_memories=0).recall(place, "question", limit=5)
    assert centered[0].memory.text == "distinct"
    assert {h.match for h in centered} == {"vector"}


def test_a_similarity_floor_is_checked_on_the_plain_cosine(by_meaning, place):
    by_meaning().remember_many(place, [*TYPICAL, "distinct"], on_duplicate="keep")
    # "distinct" is ranked first once centered, but its plain cosine (0.75) is under the floor
    hits = by_meaning(meaning_centering=0.7).recall(place, "question", limit=5, min_similarity=0.8)
    assert sorted(h.memory.text for h in hits) == TYPICAL
    assert by_meaning(meaning_centering=0.0).recall(place, "question", limit=5, min_similarity=0.95) == []


# The question is e0; "leader" is close to it and leans toward e1. "sibling" shares that lean but
# is further from the question than "stranger" is; feedback from the leader brings it up.
FEEDBACK = {
    "question": (1.0, 0.0, 0.0, 0.0), "leader": (1.0, 0.5, 0.0, 0.0),
    "sibling": (0.5, 1.0, 0.0, 0.0), "stranger": (0.6, 0.0, 1.0, 0.0),
}


def test_feedback_moves_the_query_toward_the_first_hits(make_service, place):
    def service(memories: int):
        options = Options(lexical_weight=0.0, meaning_centering=0.0, feedback_memories=memories, feedback_weight=1.0)
        return make_service(embedder=TableEmbedder(FEEDBACK), options=options)

    service(0).remember_many(place, ["leader", "sibling", "stranger"])
    assert [h.memory.text for h in service(0).recall(place, "question")] == ["leader", "stranger", "sibling"]
    assert [h.memory.text for h in service(1).recall(place, "question")] == ["leader", "sibling", "stranger"]
