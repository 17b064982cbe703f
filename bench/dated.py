"""What a question naming a period costs recall (issue 31): in process, at 1,000 memories said over
two years (their `timestamp`), recall p50 / p95 of the same questions with a period ("... in May",
"... last year", "... en mai 2025") and without one, dates on (the product) and off
(`date_weight=0`), on each store. A question with a period ranks 50 candidates instead of the 5
asked for, reads them, and reads each one's words for a time it names.

    python -m bench.dated --stores memory,sqlite,postgres --out bench/results/dated.json

Vectors come from the local model, computed beforehand (bench.common.embed_cached): embedding time
stays out, as in bench.latency."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import (
    PrecomputedEmbedder,
    embed_cached,
    machine,
    percentiles,
    postgres,
    queries,
    sentences,
    time_calls,
    write_results,
)
from bench.latency import analyze, open_store
from portal.domain.options import Options
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

ASKED = datetime(2026, 1, 10, 12, tzinfo=UTC)
PERIODS = ("in May", "last year", "en mai 2025", "on 3 March 2025", "two months ago")


def said(n: int, size: int) -> int:
    """The n-th memory's timestamp: spread evenly over the two years before ASKED."""
    return int(ASKED.timestamp()) - int((size - n) * 2 * 365 * 86400 / size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="memory,sqlite,postgres")
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--recalls", type=int, default=300)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    stores = [s for s in args.stores.split(",") if s]
    pool = sentences(args.size)
    plain = queries(60)
    dated = [f"{q} {PERIODS[i % len(PERIODS)]}" for i, q in enumerate(plain)]
    table = dict(zip([t for t, _ in pool], embed_cached([t for t, _ in pool], "document", "pool"), strict=True))
    table.update(zip(plain, embed_cached(plain, "query", "queries"), strict=True))
    table.update(zip(dated, embed_cached(dated, "query", "dated-queries"), strict=True))
    results: dict[str, Any] = {"machine": machine(), "settings": vars(args) | {"out": None}}
    with postgres(args.database_url) if "postgres" in stores else nullcontext() as pg_server:
        for kind in stores:
            with open_store(kind, pg_server, f"{kind}_dated") as store:
                embedder = PrecomputedEmbedder(table)
                on = MemoryService(store, embedder, options=Options(max_active=None, uses_every=2.0), clock=lambda: ASKED)
                off = MemoryService(store, embedder, options=Options(max_active=None, uses_every=2.0, date_weight=0.0),
                                    clock=lambda: ASKED)
                place = Place("dated-reader", "bench")
                for n, (text, kind_of) in enumerate(pool):
                    on.remember_many(place, [text], kind=kind_of, on_duplicate="keep",
                                     attributes={"timestamp": said(n, len(pool))})
                analyze(store)
                row: dict[str, Any] = {}
                for name, svc, qs in (("plain", on, plain), ("dated_on", on, dated), ("dated_off", off, dated)):
                    row[name] = percentiles(time_calls(lambda i, s=svc, q=qs, p=place: s.recall(p, q[i % len(q)], limit=5),
                                                       args.recalls))
                results[kind] = row
                print(f"{kind}: " + ", ".join(f"{k} p50 {v['p50_ms']} p95 {v['p95_ms']} ms" for k, v in row.items()),
                      file=sys.stderr)
    write_results("dated", results, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
