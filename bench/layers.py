"""Where one recall's time goes, layer by layer (issue 30, item 1).

    python -m bench.layers --store sqlite --recalls 400
    python -m bench.layers --store postgres --out bench/results/layers-postgres.json

The app as `serve` builds it (the local model, a SQLite file or a fresh PostgreSQL database, the
rate limit counted in its shared store), a person of 1,000 memories (real vectors, precomputed),
and recalls through the JSON API on Flask's WSGI interface, one at a time, with a clock around
each layer: the API key's check, the rate limit, the body's validation, the app's admission (the
person's decision about it), the query's embedding, the ranking and the hits' read, noting the
hits' use, the answer's serialisation; and the SQL statements sent (count and time). Answers the
mean milliseconds per recall of each; what is left is Flask and werkzeug. gunicorn and the
loopback HTTP are measured by `bench.latency --only http` (one client), to compare with the total.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import PrecomputedEmbedder, embed_cached, fresh_database, local_embedder, postgres, queries, sentences
from bench.latency import analyze, fill

SIZE = 1000
spent: dict[str, float] = defaultdict(float)
calls: dict[str, int] = defaultdict(int)


def timed(owner: Any, name: str, layer: str) -> None:
    """Wrap `owner.name` so that the time spent in it is added to `layer`."""
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[layer] += time.perf_counter() - started
            calls[layer] += 1

    setattr(owner, name, wrapper)


def instrument() -> None:
    from flask_limiter import Limiter

    from portal.adapters.sql.tenants import Tenants
    from portal.api import auth, registry
    from portal.services import apps, context, recall

    timed(Limiter, "_check_request_limit", "rate limit")
    timed(auth, "authenticate", "API key")
    registry.authenticate = auth.authenticate  # the registry's own name for it
    timed(registry, "_validated", "validation")
    timed(registry.Api, "_render", "serialisation")
    timed(recall.Recall, "recall", "service")
    timed(context.Context, "embed_many", "embedding")
    timed(apps.AppStore, "_admitted", "admission")
    try:
        from portal.services import use_log

        timed(use_log.UseLog, "note", "noting uses")
    except ImportError:  # the code before issue 30 (run with its tree first on PYTHONPATH): a write of its own
        timed(apps.AppStore, "mark_used", "noting uses")
    timed(Tenants, "ai_enabled", "AI switch")


@contextmanager
def database(kind: str) -> Iterator[str]:
    folder = tempfile.mkdtemp(prefix="bench-layers-")
    try:
        if kind == "sqlite":
            yield f"sqlite:///{folder}/memory.db"
        else:
            with postgres() as server:
                yield fresh_database(server, "bench_layers")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.layers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--recalls", type=int, default=400)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions (cProfile)")
    args = parser.parse_args(argv)

    from sqlalchemy import event

    from portal.adapters.sql.engine import make_engine
    from portal.adapters.sql.migrate import upgrade
    from portal.app import create_app
    from portal.bootstrap import build_runtime
    from portal.config import load_config
    from portal.domain.options import Options
    from portal.domain.types import Place
    from portal.services.memory_service import MemoryService

    pool = sentences(SIZE)
    vectors = embed_cached([t for t, _ in pool], "document", "pool")
    qs = queries(200)
    model = local_embedder()
    with database(args.store) as url:
        engine = make_engine(url)
        upgrade(engine)
        folder = tempfile.mkdtemp(prefix="bench-layers-instance-")
        config = load_config({"MEMORY_DATABASE_URL": url, "MEMORY_INSTANCE_PATH": folder, "MEMORY_EMBEDDER": "none",
                              "MEMORY_SECRET_KEY": "bench-" + "k" * 40, "MEMORY_MAX_ACTIVE": "0",
                              "MEMORY_API_RATE_LIMIT": "100000000/minute"})
        runtime = build_runtime(config, embedder=model, engine=engine, llm=None)
        instrument()  # before the app is made: it binds the limiter's check then
        app = create_app(runtime=runtime)
        tenant = runtime.tenants.create("bench").id
        _, token = runtime.api_keys.create(tenant, ("memories:read",), name="Assistant")
        table = {t: v for (t, _), v in zip(pool, vectors, strict=True)}
        # Through the runtime's store: on PostgreSQL its text is encrypted (issue 26), as the server reads it.
        loader = MemoryService(runtime.store, embedder=PrecomputedEmbedder(table), options=Options(max_active=None))
        place = Place("reader", tenant)
        fill(loader, place, pool)
        analyze(loader.store)
        client = app.test_client()
        headers = {"Authorization": f"Bearer {token}"}
        statements = {"count": 0, "seconds": 0.0}
        began: dict[int, float] = {}

        @event.listens_for(engine, "before_cursor_execute")
        def _before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
            began[id(cursor)] = time.perf_counter()

        @event.listens_for(engine, "after_cursor_execute")
        def _after(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
            statements["count"] += 1
            statements["seconds"] += time.perf_counter() - began.pop(id(cursor), time.perf_counter())

        def one(i: int) -> None:
            answer = client.post("/api/v1/people/reader/recall", json={"query": qs[i % len(qs)], "limit": 5},
                                 headers=headers)
            assert answer.status_code == 200 and answer.json["items"], answer.status_code

        for i in range(50):
            one(i)  # warm: the model, the recall cache, the connections
        seen: list[str] = []  # one recall's statements, their first words (never a parameter)

        def _seen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
            seen.append(" ".join(statement.split())[:100])

        event.listen(engine, "before_cursor_execute", _seen)
        one(0)
        event.remove(engine, "before_cursor_execute", _seen)
        spent.clear()
        calls.clear()
        statements.update(count=0, seconds=0.0)
        totals = []
        profiler = cProfile.Profile() if args.profile else None
        for i in range(args.recalls):
            started = time.perf_counter()
            if profiler is not None:
                profiler.enable()
            one(i)
            if profiler is not None:
                profiler.disable()
            totals.append(time.perf_counter() - started)
        if profiler is not None:
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(args.profile)
        runtime.dispose()
        shutil.rmtree(folder, ignore_errors=True)
    n = args.recalls
    total = sum(totals) / n * 1000
    per = {layer: round(seconds / n * 1000, 3) for layer, seconds in sorted(spent.items())}
    # The admission is a read inside the ranking's transaction (and, before issue 30, inside the
    # use's write too): told, not taken away again.
    inside = per.get("embedding", 0) + per.get("noting uses", 0) + per.get("AI switch", 0)
    per["ranking and hits (service less embedding, AI switch, noting uses)"] = round(per.get("service", 0) - inside, 3)
    outside = sum(per.get(k, 0) for k in ("API key", "rate limit", "validation", "service", "serialisation"))
    per["Flask, werkzeug and the rest"] = round(total - outside, 3)
    report = {"store": args.store, "recalls": n, "memories": SIZE, "total_ms_mean": round(total, 3),
              "total_ms_p50": round(float(np.percentile(totals, 50)) * 1000, 3), "layers_ms_mean": per,
              "sql_statements_per_recall": round(statements["count"] / n, 2),
              "sql_ms_per_recall": round(statements["seconds"] / n * 1000, 3), "one_recall_statements": seen}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    print(f"{args.store}: {total:.2f} ms a recall, {report['sql_statements_per_recall']} statements", file=sys.stderr)


if __name__ == "__main__":
    main()
