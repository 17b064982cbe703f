"""What recall pays for "don't use this" and expiry (issue 29), against the code before them.

    python bench/decisions.py                               # memory,sqlite at 1,000 and 100,000; postgres at 1,000
    python bench/decisions.py --stores postgres --sizes 1000,100000
    python bench/decisions.py --quick                       # small counts, to check the script

Each measurement is a process of its own, run with `portal` taken from one of two trees: this one
(HEAD) and a git worktree of the revision before issue 29 (`--base`, eebdfac by default, made
under /tmp once). In it, one person holds N memories (distinct made-up sentences, random unit
vectors of 384 dimensions given by a fake embedder so that what is timed is the recall itself:
both rankings, fusion, loading the hits, marking them used), and an app recalls (`for_app(...)
.recall`, limit 5) R times after 10 untimed ones:

- `before`: the base revision (no filter exists);
- `none`: HEAD, nobody decided anything (every memory usable, none expiring);
- `some`: HEAD, 5% withheld from every app, 5% from this app, 10% expiring (in a year).

The base and HEAD alternate for each (store, size), `--rounds` times (each round a process of its
own per variant); each variant's p50 and p95 are the medians over the rounds (a single p95 of a
few hundred sub-millisecond calls moves by ±20% between runs on a quiet machine). The load average
is recorded before each measurement. Results go to bench/results/decisions.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent.parent
DIM = 384


class Vectors:
    """A fake embedder: a fixed random unit vector per text (the same in both trees)."""

    model_id = "bench-random-384"

    def embed(self, texts: Any, purpose: str = "document") -> tuple[np.ndarray, str]:
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out, self.model_id


def texts(count: int) -> tuple[list[str], list[str]]:
    """`count` distinct sentences of made-up words, and the words (queries are two of them)."""
    rng = random.Random(7)
    syllables = ["ka", "lo", "mi", "ren", "sa", "tu", "vor", "zel", "pi", "dan", "ol", "ber", "qui", "fa", "nor"]
    words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(6000)})
    return [f"Likes {' '.join(rng.choice(words) for _ in range(6))} number {i}" for i in range(count)], words


def measure(store_kind: str, size: int, recalls: int, pg: str | None, decided: bool, cache_mb: int | None = None
            ) -> dict[str, Any]:
    """One measurement, in this process, with whichever `portal` is first on the path."""
    from portal.adapters.memory.store import InMemoryStore
    from portal.domain.apps import App
    from portal.domain.options import Options
    from portal.domain.types import Place
    from portal.services.memory_service import MemoryService

    folder, engine = None, None
    if store_kind == "memory":
        store: Any = InMemoryStore()
    else:
        from portal.adapters.sql.engine import make_engine
        from portal.adapters.sql.migrate import upgrade
        from portal.adapters.sql.store import SqlStore

        if store_kind == "sqlite":
            folder = tempfile.mkdtemp(prefix="bench-decisions-")
            url = f"sqlite:///{folder}/memory.db"
        else:
            assert pg is not None
            url = pg
        engine = make_engine(url)
        upgrade(engine)
        store = SqlStore(engine) if cache_mb is None else SqlStore(engine, cache_bytes=cache_mb * 1024 * 1024)
    try:
        # No cap: the person really holds `size` active memories (the default cap, 1,000, would
        # archive all but the newest thousand).
        service = MemoryService(store, Vectors(), options=Options(max_active=None))
        place, app = Place("bench-person", "bench"), App("bench-app", "Bench")
        all_texts, words = texts(size)
        rng = random.Random(3)
        later = datetime.now(UTC) + timedelta(days=365)
        ids: list[str] = []
        for i in range(0, size, 500):
            chunk = all_texts[i:i + 500]
            expiring = decided and (i // 500) % 10 == 0  # one batch in ten: 10% expiring
            saved = service.remember_many(place, chunk, kind="fact", on_duplicate="keep",
                                          **({"expires_at": later} if expiring else {}))
            ids += [s.memory.id for s in saved if hasattr(s, "memory")]
        if decided:
            chosen = rng.sample(ids, size // 10)
            for n, memory_id in enumerate(chosen):
                service.set_use(place, memory_id, False, None if n % 2 else app.id)
        if engine is not None and engine.dialect.name == "postgresql":
            with engine.connect() as conn:
                conn.exec_driver_sql("ANALYZE memories")
                conn.commit()
        view = service.for_app(app)
        queries = [" ".join(rng.choice(words) for _ in range(2)) for _ in range(recalls + 10)]
        for q in queries[:10]:
            view.recall(place, q, limit=5)
        samples = []
        for q in queries[10:]:
            started = time.perf_counter()
            view.recall(place, q, limit=5)
            samples.append((time.perf_counter() - started) * 1000)
        a = np.asarray(samples)
        import portal

        return {"p50": round(float(np.percentile(a, 50)), 3), "p95": round(float(np.percentile(a, 95)), 3),
                "n": len(samples), "code": str(Path(portal.__file__).parent.parent)}
    finally:
        if engine is not None:
            engine.dispose()
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


def base_tree(revision: str) -> Path:
    """A git worktree of `revision` under /tmp (made once, detached)."""
    path = Path(tempfile.gettempdir()) / f"portal-{revision}"
    if not (path / "portal").is_dir():
        subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", str(path), revision], check=True,
                       capture_output=True)
    return path


def run_one(tree: Path, store: str, size: int, recalls: int, pg: str | None, decided: bool,
            cache_mb: int | None = None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, str(Path(__file__).resolve()), "--measure", store, "--size", str(size),
            "--recalls", str(recalls)] + (["--pg", pg] if pg else []) + (["--decided"] if decided else []) + (
            ["--cache-mb", str(cache_mb)] if cache_mb is not None else [])
    load = [round(x, 2) for x in os.getloadavg()]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "load_before": load}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="memory,sqlite,postgres")
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--pg-max", type=int, default=1000, help="largest size measured on PostgreSQL")
    parser.add_argument("--base", default="eebdfac")
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1, help="measurements of each variant (medians kept)")
    parser.add_argument("--cache-mb", type=int, default=None,
                        help="the SQL stores' recall cache (default the product's, 256 MB: a place of 100,000 is not cached)")
    parser.add_argument("--database-url", default=None, help="a PostgreSQL server (else a throwaway one)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "bench" / "results" / "decisions.json")
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--pg", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--decided", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.size, args.recalls, args.pg, args.decided, args.cache_mb)))
        return
    sys.path.insert(0, str(HERE))
    from bench.common import fresh_database, machine, postgres

    sizes = [200] if args.quick else [int(s) for s in args.sizes.split(",")]
    recalls = 30 if args.quick else args.recalls
    old = base_tree(args.base)
    results: dict[str, Any] = {"base": args.base, "machine": machine(), "cache_mb": args.cache_mb, "rows": []}
    stores = args.stores.split(",")
    with (postgres(args.database_url) if "postgres" in stores else _nothing()) as server:
        for store in stores:
            for size in sizes:
                if store == "postgres" and size > args.pg_max:
                    continue
                row: dict[str, Any] = {"store": store, "size": size}
                runs: dict[str, list[dict[str, Any]]] = {"before": [], "none": [], "some": []}
                for _ in range(1 if args.quick else args.rounds):
                    for name, tree, decided in (("before", old, False), ("none", HERE, False), ("some", HERE, True)):
                        pg = fresh_database(server, f"bench_decisions_{name}") if store == "postgres" else None
                        runs[name].append(run_one(tree, store, size, recalls, pg, decided, args.cache_mb))
                for name, measured in runs.items():
                    row[name] = {"p50": median(m["p50"] for m in measured), "p95": median(m["p95"] for m in measured),
                                 "n": sum(m["n"] for m in measured), "code": measured[0]["code"],
                                 "rounds": measured}
                results["rows"].append(row)
                print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == "__main__":
    main()
