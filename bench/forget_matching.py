"""What forget-matching's preview costs when a subject names many people (issue 38, item 22),
against the code before the change and against a recall of the same subject.

    python bench/forget_matching.py                         # PostgreSQL with keys and without, SQLite, in-memory
    python bench/forget_matching.py --stores postgres-keys --rounds 3
    python bench/forget_matching.py --quick                 # small counts, to check the script

Each measurement is a process of its own, with `portal` taken from one of two trees: a git worktree
of the revision before the change (`--base`, made under /tmp once) and this one. In it, one person
holds 336 memories (made-up sentences, a tenth naming one of a few people, a tenth archived; a fake
embedder gives each text a fixed random unit vector of 384 dimensions, so that what is timed is the
matching, not a model), a recall has put the place in the recall cache as in a running worker, and
the dry run (`preview_forget_matching`) is timed R times for two subjects:

- `anna`: "my sister Anna" (one name);
- `names`: 166 capitalised short words, 500 characters: every word a name.

A recall of each subject (limit 5), timed the same way, is the yardstick. The stores: PostgreSQL
with keys (`postgres-keys`: the text is encrypted, so words are ranked in process), PostgreSQL
without, a SQLite file, the in-memory store. p50 and p95 in ms are medians over `--rounds`; the
load average is recorded before each measurement. Results go to bench/results/forget_matching.json.
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
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent.parent
DIM = 384
SIZE = 336
PEOPLE = ["Anna", "Paul", "Ines", "Marco", "Yuki", "Sofia", "Omar", "Lea"]
SHORT = [a + b for a in "BCDFGHJKLMNPRSTVWXYZ" for b in "aeiou"] + [v.upper() + c for v in "aeiou" for c in "bcdfgklmnprstvz"]
SUBJECTS = {"anna": "my sister Anna", "names": " ".join(SHORT[:166])}


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


def texts(count: int) -> list[str]:
    """`count` distinct sentences of made-up words; every tenth names one of PEOPLE."""
    rng = random.Random(7)
    syllables = ["ka", "lo", "mi", "ren", "sa", "tu", "vor", "zel", "pi", "dan", "ol", "ber", "qui", "fa", "nor"]
    words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(3000)})
    made = []
    for i in range(count):
        said = " ".join(rng.choice(words) for _ in range(6))
        made.append(f"Likes {said} with {PEOPLE[i // 10 % len(PEOPLE)]} ({i})" if i % 10 == 0 else f"Likes {said} ({i})")
    return made


def timed(call: Any, rounds: int) -> dict[str, float]:
    for _ in range(2):
        call()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    a = np.asarray(samples)
    return {"p50": round(float(np.percentile(a, 50)), 3), "p95": round(float(np.percentile(a, 95)), 3), "n": rounds}


def measure(store_kind: str, rounds: int, pg: str | None, size: int) -> dict[str, Any]:
    """One measurement, in this process, with whichever `portal` is first on the path."""
    from portal.adapters.memory.store import InMemoryStore
    from portal.domain.options import Options
    from portal.domain.types import Place
    from portal.services.memory_service import MemoryService

    folder, engine = None, None
    if store_kind == "memory":
        store: Any = InMemoryStore()
    else:
        from portal.adapters.cipher import FernetCipher, generate_key
        from portal.adapters.sql.engine import make_engine
        from portal.adapters.sql.migrate import upgrade
        from portal.adapters.sql.store import SqlStore

        if store_kind == "sqlite":
            folder = tempfile.mkdtemp(prefix="bench-forget-")
            url = f"sqlite:///{folder}/memory.db"
        else:
            assert pg is not None
            url = pg
        engine = make_engine(url)
        upgrade(engine)
        store = SqlStore(engine, cipher=FernetCipher([generate_key()]) if store_kind.endswith("keys") else None)
    try:
        service = MemoryService(store, Vectors(), options=Options(max_active=None))
        place = Place("bench-person", "bench")
        saved = service.remember_many(place, texts(size), kind="fact", on_duplicate="keep")
        ids = [s.memory.id for s in saved if hasattr(s, "memory")]
        with store.write(place) as tx:
            tx.set_state(ids[5::10], "archived")
            tx.commit()
        if engine is not None and engine.dialect.name == "postgresql":
            with engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM ANALYZE")
        service.recall(place, "warm", limit=5)  # a running worker has the place in its recall cache
        out: dict[str, Any] = {}
        for name, subject in SUBJECTS.items():
            matched = len(service.preview_forget_matching(place, subject).items)
            out[name] = {"preview": timed(lambda s=subject: service.preview_forget_matching(place, s), rounds),
                         "recall": timed(lambda s=subject: service.recall(place, s, limit=5), rounds),
                         "matched": matched}
        import portal

        return {**out, "code": str(Path(portal.__file__).parent.parent)}
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


def run_one(tree: Path, store: str, rounds: int, pg: str | None, size: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, str(Path(__file__).resolve()), "--measure", store, "--rounds", str(rounds),
            "--size", str(size)] + (["--pg", pg] if pg else [])
    load = [round(x, 2) for x in os.getloadavg()]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "load_before": load}


def summary(measured: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the rounds of each subject's preview and recall."""
    out: dict[str, Any] = {}
    for name in SUBJECTS:
        out[name] = {what: {q: median(m[name][what][q] for m in measured) for q in ("p50", "p95")}
                     for what in ("preview", "recall")}
        out[name]["matched"] = measured[0][name]["matched"]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="postgres-keys,postgres,sqlite,memory")
    parser.add_argument("--base", default="1f80b12", help="the revision before the change")
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each variant (medians kept)")
    parser.add_argument("--calls", type=int, default=20, help="timed calls of each kind in a measurement")
    parser.add_argument("--database-url", default=None, help="a PostgreSQL server (else a throwaway one)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "bench" / "results" / "forget_matching.json")
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--pg", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=SIZE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.rounds, args.pg, args.size)))
        return
    sys.path.insert(0, str(HERE))
    from bench.common import fresh_database, machine, postgres

    rounds, calls = (1, 3) if args.quick else (args.rounds, args.calls)
    old = base_tree(args.base)
    results: dict[str, Any] = {"base": args.base, "machine": machine(), "memories": SIZE, "rows": []}
    stores = args.stores.split(",")
    with postgres(args.database_url) as server:
        for store in stores:
            runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
            for _ in range(rounds):
                for name, tree in (("before", old), ("after", HERE)):
                    pg = fresh_database(server, f"bench_forget_{name}") if store.startswith("postgres") else None
                    runs[name].append(run_one(tree, store, calls, pg, SIZE))
            row = {"store": store, **{name: {**summary(measured), "rounds": measured} for name, measured in runs.items()}}
            results["rows"].append(row)
            print(json.dumps({k: v for k, v in row.items() if k == "store"} | {
                name: summary(measured) for name, measured in runs.items()}), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
