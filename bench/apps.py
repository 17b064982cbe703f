"""What connected apps cost: the same calls through the service and through an app's view of it
(`MemoryService.for_app`), which checks the person's decision about the app in every transaction and
records the app's uses (issue 18).

In process, on each store, one person holding `--size` memories (the local model's vectors computed
beforehand, so embedding time stays out), the two services' calls interleaved call by call so that
both meet the same machine: recall (limit 5; the app's view also marks them `recalled`), get (the
app's view records a `read`) and remember with the embedder off. Prints JSON and writes
bench/results/apps.json.

    python -m bench.apps [--stores memory,sqlite,postgres] [--size 1000] [--calls 300] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.common import (
    PrecomputedEmbedder,
    embed_cached,
    load_average,
    machine,
    percentiles,
    postgres,
    queries,
    sentences,
    write_results,
)
from bench.latency import open_store
from portal.domain.apps import App
from portal.domain.options import Options
from portal.domain.types import Place
from portal.services.memory_service import MemoryService


def paired(calls: int, plain: Callable[[int], Any], app: Callable[[int], Any], warmup: int = 10) -> dict[str, Any]:
    """Both calls, alternately, `calls` times each (after a warm-up): their percentiles, and the
    median of the per-pair differences (app minus plain), in ms."""
    for i in range(warmup):
        plain(i)
        app(i)
    plain_ms: list[float] = []
    app_ms: list[float] = []
    for i in range(calls):
        for fn, into in ((plain, plain_ms), (app, app_ms)) if i % 2 == 0 else ((app, app_ms), (plain, plain_ms)):
            started = time.perf_counter()
            fn(i)
            into.append((time.perf_counter() - started) * 1000)
    differences = sorted(a - p for a, p in zip(app_ms, plain_ms, strict=True))
    return {"service": percentiles(plain_ms), "app_view": percentiles(app_ms),
            "median_added_ms": round(differences[len(differences) // 2], 3)}


def measure(kind: str, args: argparse.Namespace, pool: list[tuple[str, str]], table: dict[str, Any],
            qs: list[str], pg_server: str | None) -> dict[str, Any]:
    with open_store(kind, pg_server, "apps") as store:
        options = Options(max_active=None)
        service = MemoryService(store, embedder=PrecomputedEmbedder(table), options=options)
        place = Place("reader", "bench")
        texts = [t for t, _ in pool[: args.size]]
        for i in range(0, len(texts), 500):
            service.remember_many(place, texts[i : i + 500], on_duplicate="keep")
        if getattr(store, "postgres", False):
            with store.engine.connect() as conn:
                conn.exec_driver_sql("ANALYZE")
                conn.commit()
        view = service.for_app(App("bench-app", "Bench app"))
        ids = [m.id for m in service.list(place, limit=200).items]
        words = MemoryService(store, embedder=None, options=options)
        words_view = words.for_app(App("bench-app", "Bench app"))
        load = load_average()
        out: dict[str, Any] = {"memories": args.size, "load_average_before": load}
        out["recall"] = paired(args.calls, lambda i: service.recall(place, qs[i % len(qs)], limit=5),
                               lambda i: view.recall(place, qs[i % len(qs)], limit=5))
        out["get"] = paired(args.calls, lambda i: service.get(place, ids[i % len(ids)]),
                            lambda i: view.get(place, ids[i % len(ids)]))
        fresh = [f"Bench note number {n} about the weather" for n in range(args.calls * 2 + 40)]
        out["remember_embedder_off"] = paired(args.calls, lambda i: words.remember(Place("w1", "bench"), fresh[2 * i]),
                                              lambda i: words_view.remember(Place("w2", "bench"), fresh[2 * i + 1]))
        with store.read(place) as tx:
            out["use_rows_after"] = len(tx.app_uses())
        print(f"{kind}: recall p95 {out['recall']['service']['p95_ms']} -> {out['recall']['app_view']['p95_ms']} ms, "
              f"added {out['recall']['median_added_ms']} ms", file=sys.stderr)
        return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.apps", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="memory,sqlite,postgres")
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--database-url", default=None, help="a PostgreSQL server instead of a throwaway one")
    parser.add_argument("--quick", action="store_true", help="small counts, to check the script runs")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.calls = 200, 40
    stores = [s for s in args.stores.split(",") if s]
    pool = sentences(max(args.size, 1000))
    qs = queries(200)
    table = dict(zip([t for t, _ in pool], embed_cached([t for t, _ in pool], "document", "apps-pool"), strict=False))
    table.update(zip(qs, embed_cached(qs, "query", "apps-queries"), strict=True))
    results: dict[str, Any] = {"machine": machine(), "settings": {"size": args.size, "calls": args.calls}}
    with postgres(args.database_url) if "postgres" in stores else nothing() as pg_server:
        for kind in stores:
            results[kind] = measure(kind, args, pool, table, qs, pg_server)
    write_results("apps", results, None if args.out is None else __import__("pathlib").Path(args.out))


@contextmanager
def nothing() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    main()
