"""What encryption at rest costs recall on PostgreSQL (issue 26: no text in the clear there).

In process, on a throwaway PostgreSQL, for each person size: recall from the worker's recall cache,
and recall right after a write to the same person (the write replaces the place's token, so the
recall reads the person's memories again and rebuilds the cache), without and with a cipher.
The benchmarks' `PrecomputedEmbedder` (the real all-MiniLM-L6-v2 vectors, computed once).

    python -m bench.encryption [--sizes 100,1000] [--quick]

Prints JSON and writes bench/results/encryption.json; docs/benchmarks.md ("What encryption costs
recall on PostgreSQL") reads it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import embed_cached, machine, queries, sentences, write_results
from bench.erasure import POOL, PrecomputedEmbedder, load_people, quiet_database
from bench.latency import open_store
from portal.adapters.cipher import FernetCipher, generate_key
from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.throwaway import throwaway_postgres
from portal.domain.options import Options
from portal.domain.types import Place
from portal.services.memory_service import MemoryService


def percentiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered), 3),
            "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1], 3)}


def measure(url: str, size: int, cipher: FernetCipher | None, table: dict[str, Any], qs: list[str],
            rounds: int) -> dict[str, Any]:
    with open_store("postgres", url, "encryption") as plain:
        store = SqlStore(plain.engine, cipher=cipher)
        service = MemoryService(store, embedder=PrecomputedEmbedder(table), options=Options(max_active=None))
        ids = load_people(service, sentences(POOL), 2, size)
        quiet_database(store)
        place = Place("person-1", "bench")
        for q in qs[:20]:  # the place in the recall cache, as in a running worker
            service.recall(place, q, limit=5)
        cached, after_write = [], []
        for i in range(rounds):
            started = time.perf_counter()
            service.recall(place, qs[i % len(qs)], limit=5)
            cached.append((time.perf_counter() - started) * 1000)
        for i in range(min(rounds, size)):
            service.update(place, ids[1][i], importance=1 + i % 5)  # a write: the token changes
            started = time.perf_counter()
            service.recall(place, qs[i % len(qs)], limit=5)
            after_write.append((time.perf_counter() - started) * 1000)
        store.settle(30)
        return {"cached": percentiles(cached), "right_after_a_write": percentiles(after_write)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.encryption", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000", help="memories per person, comma-separated")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="small counts, to check the script runs")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    sizes = [20] if args.quick else [int(s) for s in args.sizes.split(",") if s]
    rounds = 10 if args.quick else args.rounds
    pool = sentences(POOL)
    qs = queries(200)
    table = dict(zip([t for t, _ in pool], embed_cached([t for t, _ in pool], "document", "pool"), strict=True))
    table.update(zip(qs, embed_cached(qs, "query", "queries"), strict=True))
    results: dict[str, Any] = {"machine": machine(), "sizes": {}}
    with throwaway_postgres() as url:
        for size in sizes:
            results["sizes"][size] = {
                label: measure(url, size, cipher, table, qs, rounds)
                for label, cipher in (("plain", None), ("encrypted", FernetCipher([generate_key()])))
            }
            print(f"{size}: {results['sizes'][size]}", file=sys.stderr)
    write_results("encryption", results, args.out)


if __name__ == "__main__":
    main()
