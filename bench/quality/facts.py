"""LoCoMo facts retrieval through the product's own recall: the memories consolidation writes.

    python -m bench.quality.facts --store memory --out bench/results/facts.json
    python -m bench.quality.facts --store sqlite --limit 2

LoCoMo's `observation` field holds, per session and speaker, standalone facts tied to the dialog
turn(s) they came from ("Audrey has had her dogs named Pepper, Precious, and Panda for 3 years.",
`D1:7`): the form consolidation writes. Each conversation is one place whose memories are those
facts, remembered as the product remembers (kind `fact`, `on_duplicate="reinforce"`: a fact the
product takes for one already kept, by its words or at cosine >= 0.92, reinforces it, so a memory
may stand for several turns; the dev set's 1,210 facts make 1,199 memories). A question of
categories 1–4 is relevant to the facts whose turn is in its evidence; a question none of whose
evidence turns has a fact is not counted.

Two protocols, each recalled four ways (words only, plain cosine, the meaning ranking alone, and
the product's fused recall as an assistant calls it):

- full place: recall@5 (share of the question's evidence turns, among those with a fact, covered
  by the top 5) and MRR (first relevant memory in the top 10);
- small places: for 30 questions per conversation drawn with a fixed seed, a fresh place holding
  the relevant facts plus 9 (then 29) other facts of the same conversation drawn at random (same
  seed): hit@1, the share whose first hit is relevant. Most people have tens of memories, not 600.

The data (CC BY-NC 4.0, evaluation only) is read at run time from ../shared/bench/locomo-dev.json
(or --data / $LOCOMO_PATH) and never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.quality.dates import add_date_arguments, asked_at, date_options, groups, names_a_period, session_dates  # noqa: E402
from bench.quality.locomo import CATEGORIES, DEFAULT_DATA, environment, evidence_ids, open_store  # noqa: E402
from portal.adapters.embedders import LocalEmbedder  # noqa: E402
from portal.domain.options import Options  # noqa: E402
from portal.domain.types import Embedding, Place, Saved  # noqa: E402
from portal.ports import Filters, Store  # noqa: E402
from portal.services.memory_service import MemoryService  # noqa: E402

MODES = ("words", "cosine", "meaning", "fused")
SMALL_SIZES = (9, 29)
SMALL_QUESTIONS = 30
SEED = 20261201
SCOPE = "locomo-facts"


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]  # evidence turns that have at least one fact
    dated: bool = False  # it names a period (bench.quality.dates)


@dataclass
class Conversation:
    sample_id: str
    facts: list[tuple[str, list[str]]]  # (text, the turns it came from), in the data's order
    questions: list[Question]
    without_facts: int = 0  # questions of categories 1-4 none of whose evidence turns has a fact
    said: dict[str, int] = field(default_factory=dict)  # a fact's text → its session's date (seconds since 1970)
    asked: datetime = datetime(2024, 1, 1, tzinfo=UTC)  # when questions are asked (the day after the last session)


def load(path: Path, limit: int | None) -> list[Conversation]:
    out = []
    for sample in json.loads(path.read_text(encoding="utf-8"))[:limit]:
        facts: list[tuple[str, list[str]]] = []
        said: dict[str, int] = {}
        dates = session_dates(sample["conversation"])
        sessions = sample["observation"]
        for key in sorted(sessions, key=lambda k: int(re.findall(r"\d+", k)[0])):
            for _speaker, items in sessions[key].items():
                for text, turns in items:
                    ids = evidence_ids(turns if isinstance(turns, list) else [turns])
                    facts.append((str(text).strip(), ids))
                    said.setdefault(str(text).strip(), int(dates[int(re.findall(r"\d+", key)[0])].timestamp()))
        asked = asked_at(dates)
        with_fact = {t for _, ids in facts for t in ids}
        questions, without = [], 0
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            ids = [i for i in evidence_ids(qa.get("evidence", [])) if i in with_fact]
            if not ids:
                without += 1
                continue
            text = str(qa["question"])
            questions.append(Question(text, int(qa["category"]), ids, names_a_period(text, asked)))
        out.append(Conversation(sample["sample_id"], facts, questions, without, said, asked))
    return out


class CachedEmbedder:
    """The local model, asked once per distinct text and purpose: small places hold the same facts
    again and again. The vectors are the model's own; only repeated work is saved."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self._seen: dict[tuple[str, str], np.ndarray] = {}
        self.seconds = 0.0

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        missing = list(dict.fromkeys(t for t in texts if (purpose, t) not in self._seen))
        if missing:
            started = time.perf_counter()
            vectors, _ = self.inner.embed(missing, purpose)
            self.seconds += time.perf_counter() - started
            self._seen.update({(purpose, t): v for t, v in zip(missing, vectors, strict=True)})
        return np.stack([self._seen[(purpose, t)] for t in texts]), self.model_id


def keep(service: MemoryService, place: Place, facts: Sequence[tuple[str, list[str]]],
         said: dict[str, int] | None = None) -> dict[str, set[str]]:
    """The facts remembered in `place`: memory id → the turns it stands for. With `said`, each
    carries its session's date (one call per run of facts of the same date)."""
    batches = [(None, list(facts))] if said is None else [
        (day, list(batch)) for day, batch in groupby(facts, key=lambda f: said[f[0]])]
    results: list[Any] = []
    for day, batch in batches:
        results += service.remember_many(place, [t for t, _ in batch], kind="fact", on_duplicate="reinforce",
                                         attributes=None if day is None else {"timestamp": day})
    turns_of: dict[str, set[str]] = {}
    for result, (_, ids) in zip(results, facts, strict=True):
        if not isinstance(result, Saved):
            raise SystemExit(f"{place.owner_id}: a fact was refused: {result}")
        turns_of.setdefault(result.memory.id, set()).update(ids)
    return turns_of


def rankings(services: dict[str, MemoryService], store: Store, embedder: CachedEmbedder, place: Place,
             question: str, limit: int, modes: Sequence[str]) -> dict[str, list[str]]:
    found = {mode: [h.memory.id for h in services[mode].recall(place, question, limit=limit, mark=False)]
             for mode in modes if mode != "cosine"}
    if "cosine" in modes:
        vectors, model = embedder.embed([question], "query")
        with store.read(place) as tx:
            found["cosine"] = [i for i, _ in tx.nearest(Embedding(model, vectors[0]), limit, Filters())]
    return found


def score_full(found: Sequence[str], turns_of: dict[str, set[str]], evidence: Sequence[str]) -> tuple[float, float]:
    wanted = set(evidence)
    covered = set().union(*(turns_of[i] for i in found[:5])) if found else set()
    r5 = len(wanted & covered) / len(wanted)
    mrr = next((1.0 / (rank + 1) for rank, i in enumerate(found[:10]) if turns_of[i] & wanted), 0.0)
    return r5, mrr


def summarise(rows: list[tuple[int, bool, tuple[float, ...]]], names: Sequence[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for group, scores in groups(rows, CATEGORIES).items():
        if scores:
            means = np.mean(np.array(scores), axis=0)
            out[group] = {name: float(v) for name, v in zip(names, means, strict=True)} | {"questions": len(scores)}
    return out


def run(store_kind: str, conversations: list[Conversation], options: Options,
        modes: Sequence[str] = MODES, dated: bool = False) -> dict[str, Any]:
    """With `dated`, each fact carries its session's date and questions are asked the day after
    the last session (bench.quality.dates)."""
    embedder = CachedEmbedder(LocalEmbedder())
    full: dict[str, list[tuple[int, bool, tuple[float, ...]]]] = {m: [] for m in MODES}
    small: dict[int, dict[str, list[tuple[int, bool, tuple[float, ...]]]]] = {
        n: {m: [] for m in MODES} for n in SMALL_SIZES}
    started = time.perf_counter()
    with open_store(store_kind) as (store, label):
        for conv in conversations:
            clock = {"clock": lambda c=conv: c.asked} if dated else {}
            services = {
                "fused": MemoryService(store, embedder, options=options, **clock),
                "words": MemoryService(store, None, options=options, **clock),
                "meaning": MemoryService(store, embedder, options=replace(options, lexical_weight=0.0), **clock),
            }
            said = conv.said if dated else None
            place = Place(conv.sample_id, SCOPE)
            turns_of = keep(services["fused"], place, conv.facts, said)
            for q in conv.questions:
                found = rankings(services, store, embedder, place, q.text, 10, modes)
                for mode in modes:
                    full[mode].append((q.category, q.dated, score_full(found[mode], turns_of, q.evidence)))
            rng = random.Random(f"{SEED}:{conv.sample_id}")
            sampled = rng.sample(conv.questions, min(SMALL_QUESTIONS, len(conv.questions)))
            for n, q in ((n, q) for q in sampled for n in SMALL_SIZES):
                wanted = set(q.evidence)
                relevant = [f for f in conv.facts if wanted & set(f[1])]
                texts = {t for t, _ in relevant}
                others = [f for f in conv.facts if not wanted & set(f[1]) and f[0] not in texts]
                drawn = rng.sample(others, min(n, len(others)))
                facts = relevant + drawn
                rng.shuffle(facts)
                small_place = Place(f"{conv.sample_id}-{n}-{abs(hash((q.text, n))) % 10**9}", SCOPE)
                small_turns = keep(services["fused"], small_place, facts, said)
                found = rankings(services, store, embedder, small_place, q.text, 1, modes)
                for mode in modes:
                    hit = bool(found[mode]) and bool(small_turns[found[mode][0]] & wanted)
                    small[n][mode].append((q.category, q.dated, (float(hit),)))
    return {
        "store": store_kind,
        "store_label": label,
        "full": {mode: summarise(full[mode], ("recall@5", "mrr")) for mode in modes},
        "small": {str(n): {mode: summarise(small[n][mode], ("hit@1",)) for mode in modes} for n in SMALL_SIZES},
        "facts": sum(len(c.facts) for c in conversations),
        "questions": sum(len(c.questions) for c in conversations),
        "questions_without_facts": sum(c.without_facts for c in conversations),
        "embedder_seconds": embedder.seconds,
        "seconds": time.perf_counter() - started,
    }


def table(report: dict[str, Any]) -> str:
    lines = [f"{report['store_label']}: facts (full place: recall@5, MRR; small places: hit@1)"]
    modes = list(report["full"])
    for cat in [*(str(c) for c in CATEGORIES), "dated", "all"]:
        first = report["full"][modes[0]].get(cat)
        if first is None:
            continue
        name = (cat if cat in ("all", "dated") else f"{cat} {CATEGORIES[int(cat)]}") + f" ({first['questions']} questions)"
        lines.append(name)
        for mode in modes:
            f = report["full"][mode][cat]
            s = [report["small"][str(n)][mode].get(cat, {}).get("hit@1", float("nan")) for n in SMALL_SIZES]
            lines.append(f"  {mode:<8} recall@5 {f['recall@5']:.3f}  MRR {f['mrr']:.3f}  "
                         f"hit@1 +9 {s[0]:.3f}  +29 {s[1]:.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", choices=("memory", "sqlite", "postgres"), default="memory")
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("LOCOMO_PATH", DEFAULT_DATA)))
    add_date_arguments(parser)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"no LoCoMo data at {args.data} (see ../shared/bench/README-data.md)")
    report = run(args.store, load(args.data, args.limit), Options(**date_options(args)), dated=args.dated)
    report["environment"] = environment(args.data)
    report["command"] = " ".join(["python -m bench.quality.facts", *(argv if argv is not None else sys.argv[1:])])
    print(table(report))
    print(f"{report['facts']} facts, {report['questions']} questions "
          f"({report['questions_without_facts']} without a fact left out), {report['seconds']:.0f} s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
