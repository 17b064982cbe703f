"""What a recall score means, on LoCoMo's dev conversations (issue 39).

    python -m bench.quality.scores --fit --out bench/results/scores.json
    python -m bench.quality.scores --out /tmp/scores-before.json      # thresholds only (any version)

Two parts:

- `--fit`: the constants of `portal.domain.recall.relevance`. Every (question, memory) pair of
  the facts protocol (bench.quality.facts: each conversation's standalone facts, a fact relevant
  when one of its turns is the question's evidence) gives the plain cosine (local model) and the
  coverage of the question's terms; a logistic regression of "relevant" on them, each class
  weighed equally, once with the cosine and once on the words alone. Fitted on the five dev
  conversations, and once per conversation left out (fitted on the other four, measured on it)
  to see how the constants and the thresholds' meaning hold on a conversation not fitted on.
- always: what a threshold keeps through the product's own recall (limit 10, default options),
  per protocol (facts and turns): the share of the questions' evidence still found among the
  hits scoring at least 0.1 / 0.3 / 0.6 (mem0's search default here, mem0's v2 default, CrewAI's),
  and how many hits are kept per question. It only calls `recall`, so it measures any version.

The data (CC BY-NC 4.0, evaluation only) is read at run time from ../shared/bench/locomo-dev.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.quality import facts, locomo  # noqa: E402
from portal.adapters.embedders import LocalEmbedder  # noqa: E402
from portal.adapters.memory.store import InMemoryStore  # noqa: E402
from portal.domain.text import terms  # noqa: E402
from portal.domain.types import Place  # noqa: E402
from portal.services.memory_service import MemoryService  # noqa: E402

THRESHOLDS = (0.1, 0.3, 0.6)
DATA = ROOT.parent / "shared" / "bench" / "locomo-dev.json"


def pairs(conversation: facts.Conversation, embedder: facts.CachedEmbedder) -> tuple[np.ndarray, np.ndarray]:
    """Features (cosine, coverage) and labels of every (question, fact) pair of a conversation."""
    from portal.domain.recall.relevance import Query  # why: the module --fit calibrates (absent before issue 39)

    texts = list(dict.fromkeys(t for t, _ in conversation.facts))
    turns_of: dict[str, set[str]] = {}
    for text, ids in conversation.facts:
        turns_of.setdefault(text, set()).update(ids)
    docs, _ = embedder.embed(texts, "document")
    docs = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    held = [set(terms(t)) for t in texts]
    features, labels = [], []
    for question in conversation.questions:
        q, _ = embedder.embed([question.text], "query")
        cosines = docs @ (q[0] / np.linalg.norm(q[0]))
        asked = Query(question.text)
        wanted = set(question.evidence)
        for i, text in enumerate(texts):
            features.append((float(cosines[i]), asked.covered(held[i])))
            labels.append(1.0 if turns_of[text] & wanted else 0.0)
    return np.array(features), np.array(labels)


def fit(x: np.ndarray, y: np.ndarray, iterations: int = 50) -> np.ndarray:
    """Logistic regression (Newton's method) of y on x plus a bias, classes weighed equally:
    the coefficients, bias last."""
    design = np.hstack([x, np.ones((len(x), 1))])
    weight = np.where(y > 0, len(y) / (2 * y.sum()), len(y) / (2 * (len(y) - y.sum())))
    beta = np.zeros(design.shape[1])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-design @ beta))
        gradient = design.T @ (weight * (y - p))
        hessian = (design * (weight * p * (1 - p))[:, None]).T @ design + 1e-6 * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.abs(step).max() < 1e-9:
            break
    return beta


def above(scores: np.ndarray, y: np.ndarray) -> dict[str, dict[str, float]]:
    """Per threshold: the share of relevant and of unrelated pairs scoring at least it."""
    return {str(t): {"relevant": round(float((scores[y > 0] >= t).mean()), 4),
                     "unrelated": round(float((scores[y == 0] >= t).mean()), 4)} for t in THRESHOLDS}


def scored(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(np.hstack([x, np.ones((len(x), 1))]) @ beta)))


def calibrate(conversations: list[facts.Conversation], embedder: facts.CachedEmbedder) -> dict[str, Any]:
    data = [pairs(c, embedder) for c in conversations]
    x, y = np.vstack([d[0] for d in data]), np.concatenate([d[1] for d in data])
    both, words = fit(x, y), fit(x[:, 1:], y)
    out: dict[str, Any] = {
        "pairs": int(len(y)), "relevant": int(y.sum()),
        "with_cosine": [round(float(b), 3) for b in both], "words_only": [round(float(b), 3) for b in words],
        "above": above(scored(both, x), y), "words_above": above(scored(words, x[:, 1:]), y), "left_out": {},
    }
    for k, conversation in enumerate(conversations):
        rest_x = np.vstack([d[0] for j, d in enumerate(data) if j != k])
        rest_y = np.concatenate([d[1] for j, d in enumerate(data) if j != k])
        beta = fit(rest_x, rest_y)
        out["left_out"][conversation.sample_id] = {
            "with_cosine": [round(float(b), 3) for b in beta], "above": above(scored(beta, data[k][0]), data[k][1])}
    return out


def kept_facts(conversations: list[facts.Conversation], embedder: facts.CachedEmbedder) -> dict[str, Any]:
    """Facts protocol through recall: evidence turns found among the hits at each threshold."""
    rows = []
    for c in conversations:
        service = MemoryService(InMemoryStore(), embedder=embedder)
        place = Place(c.sample_id, "scores")
        turns_of = facts.keep(service, place, c.facts)
        for question in c.questions:
            hits = service.recall(place, question.text, limit=10, mark=False)
            rows.append([_found([turns_of.get(h.memory.id, set()) for h in hits if h.score >= t], question.evidence)
                         + (sum(h.score >= t for h in hits),) for t in (0.0, *THRESHOLDS)])
    return _summary(rows)


def kept_turns(conversations: list[locomo.Conversation], embedder: facts.CachedEmbedder) -> dict[str, Any]:
    """Turns protocol through recall: evidence turns found among the hits at each threshold."""
    rows = []
    for c in conversations:
        service = MemoryService(InMemoryStore(), embedder=embedder)
        place = Place(c.sample_id, "scores")
        saved = service.remember_many(place, [t for _, t in c.turns], on_duplicate="keep")
        turn_of = {s.memory.id: dia for s, (dia, _) in zip(saved, c.turns, strict=True)}
        for question in c.questions:
            hits = service.recall(place, question.text, limit=10, mark=False)
            rows.append([_found([{turn_of[h.memory.id]} for h in hits if h.score >= t], question.evidence)
                         + (sum(h.score >= t for h in hits),) for t in (0.0, *THRESHOLDS)])
    return _summary(rows)


def _found(turn_sets: Sequence[set[str]], evidence: Sequence[str]) -> tuple[float]:
    seen = set().union(*turn_sets) if turn_sets else set()
    return (len(seen & set(evidence)) / len(evidence),)


def _summary(rows: list[list[tuple[float, int]]]) -> dict[str, Any]:
    array = np.array(rows, dtype=float)  # question × threshold × (recall, hits kept)
    return {str(t): {"recall@10": round(float(array[:, k, 0].mean()), 4), "hits": round(float(array[:, k, 1].mean()), 2)}
            for k, t in enumerate((0.0, *THRESHOLDS))} | {"questions": len(rows)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--fit", action="store_true", help="fit the relevance constants (needs issue 39's module)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    embedder = facts.CachedEmbedder(LocalEmbedder())
    fact_conversations = facts.load(args.data, None)
    report: dict[str, Any] = {}
    if args.fit:
        report["fit"] = calibrate(fact_conversations, embedder)
        print(json.dumps(report["fit"], indent=1))
    report["facts"] = kept_facts(fact_conversations, embedder)
    print("facts", json.dumps(report["facts"]))
    report["turns"] = kept_turns(locomo.load(args.data, None), embedder)
    print("turns", json.dumps(report["turns"]))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
