"""Latency and throughput: in process on three stores, and through the HTTP API on gunicorn.

    python -m bench.latency                       # everything (about 10 minutes on 2 cores)
    python -m bench.latency --only inprocess --stores memory,sqlite
    python -m bench.latency --only http --http-stores postgres
    python -m bench.latency --quick               # small counts, to check the script

In process (MemoryService on the in-memory store, a SQLite file, PostgreSQL+pgvector):
- remember throughput with the embedder off and with the local model, one call per memory
  (`remember`) and in batches (`remember_many`: one embedder call and one transaction per batch);
- recall p50/p95/p99 at 100, 1,000 and 10,000 memories in the person's place, with the query's
  vector computed beforehand (the local model's real vectors, precomputed), so that what is timed is
  the recall itself: both rankings, fusion, loading the hits and noting them used (written every
  2 s off the call, as a server writes them: issue 30); the query embedding is timed on its own
  with the same queries;
- the same recall with the embedder off (words only).

Through the HTTP API (`memory-portal serve`, gunicorn, 2 workers, the local model loaded in each)
with 8 client threads on loopback: remember throughput (each client writes to its own person) and
recall latency for a person holding 1,000 memories, the query embedding included.

Memories are synthetic sentences of the kinds an assistant keeps; vectors are the real
all-MiniLM-L6-v2 vectors of those sentences (computed once, cached under the temp folder). Results
go to bench/results/latency.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    PrecomputedEmbedder,
    embed_cached,
    fresh_database,
    load_average,
    local_embedder,
    machine,
    percentiles,
    postgres,
    queries,
    sentences,
    time_calls,
    wait_for_quiet,
    write_results,
)
from bench.common import served as common_served
from portal.adapters.memory.store import InMemoryStore
from portal.domain.options import Options
from portal.domain.types import Place, Refused, Saved
from portal.services.memory_service import MemoryService

SIZES = (100, 1_000, 10_000)
POOL = 10_000


@contextmanager
def open_store(kind: str, pg_server: str | None, tag: str, revision: str = "head") -> Iterator[Any]:
    """A fresh store of this kind, migrated to `revision`, gone on leaving."""
    if kind == "memory":
        yield InMemoryStore()
        return
    from portal.adapters.sql.engine import make_engine
    from portal.adapters.sql.migrate import upgrade
    from portal.adapters.sql.store import SqlStore

    folder = None
    if kind == "sqlite":
        folder = tempfile.mkdtemp(prefix="bench-sqlite-")
        url = f"sqlite:///{folder}/memory.db"
    else:
        assert pg_server is not None
        url = fresh_database(pg_server, f"bench_{tag}")
    engine = make_engine(url)
    upgrade(engine, revision)
    try:
        yield SqlStore(engine)
    finally:
        engine.dispose()
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


def fill(service: MemoryService, place: Place, texts: list[tuple[str, str]], batch: int = 500) -> None:
    """Put these memories in the place as an import would: batched, kept as they are."""
    for i in range(0, len(texts), batch):
        chunk = texts[i : i + batch]
        for kind in {k for _, k in chunk}:
            same = [t for t, k in chunk if k == kind]
            service.remember_many(place, same, kind=kind, on_duplicate="keep")


def analyze(store: Any) -> None:
    """PostgreSQL: planner statistics, as autovacuum keeps them in any live database. Without them
    (a table just filled) its generic plans read a person's rows through the place index to find
    five ids, instead of the primary key: 3.2 ms instead of 0.45 ms at 10,000 memories."""
    if getattr(store, "postgres", False):
        with store.engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE memories")
            conn.commit()


def throughput(service: MemoryService, place: Place, texts: list[tuple[str, str]], batch: int | None) -> dict[str, Any]:
    """Memories remembered per second, one call each (batch None) or `batch` per call; texts of
    one kind per call when batched (remember_many takes one kind for the batch)."""
    results: list[Any] = []
    started = time.perf_counter()
    if batch is None:
        for text, kind in texts:
            try:
                results.append(service.remember(place, text, kind=kind))
            except Refused as refused:  # counted, as a refusal, like any other answer
                results.append(refused)
    else:
        by_kind: dict[str, list[str]] = {}
        for text, kind in texts:
            by_kind.setdefault(kind, []).append(text)
        for kind, items in by_kind.items():
            for i in range(0, len(items), batch):
                results.extend(service.remember_many(place, items[i : i + batch], kind=kind))
    elapsed = time.perf_counter() - started
    saved = [r for r in results if isinstance(r, Saved)]
    return {
        "count": len(texts), "batch": batch or 1, "seconds": round(elapsed, 3),
        "per_second": round(len(texts) / elapsed, 1),
        "new": sum(1 for r in saved if r.replaced_id is None and not r.reinforced),
        "met_a_duplicate": sum(1 for r in saved if r.replaced_id is not None or r.reinforced),
    }


def in_process(args: argparse.Namespace, pool: list[tuple[str, str]], vectors: np.ndarray, qs: list[str],
               qvectors: np.ndarray, pg_server: str | None) -> dict[str, Any]:
    table = {t: v for (t, _), v in zip(pool, vectors, strict=True)}
    table.update({q: v for q, v in zip(qs, qvectors, strict=True)})
    model = local_embedder()
    model.embed(["warm up"], "query")
    out: dict[str, Any] = {}
    # The query embedding alone: the local model, one query per call, as recall embeds it.
    out["query_embedding"] = percentiles(time_calls(lambda i: model.embed([qs[i % len(qs)]], "query"), args.recalls))
    print(f"query embedding p50 {out['query_embedding']['p50_ms']} ms", file=sys.stderr)
    sizes = [s for s in SIZES if s <= args.max_size]
    for kind in args.stores:
        res: dict[str, Any] = {"remember": {}, "recall": {}, "recall_words_only": {}}
        with open_store(kind, pg_server, f"{kind}_write") as store:
            off = MemoryService(store, embedder=None, options=Options(max_active=None))
            on = MemoryService(store, embedder=model, options=Options(max_active=None))
            n_off, n_on = args.writes, args.model_writes
            # Texts not used for recall, so nothing here meets a duplicate by chance of order.
            texts = pool[-(n_off * 2) :]
            res["remember"]["embedder_off_single"] = throughput(off, Place("w-off-1", "bench"), texts[:n_off], None)
            res["remember"]["embedder_off_batch_100"] = throughput(off, Place("w-off-2", "bench"), texts[n_off:], 100)
            res["remember"]["local_model_single"] = throughput(on, Place("w-on-1", "bench"), pool[:n_on], None)
            res["remember"]["local_model_batch_64"] = throughput(on, Place("w-on-2", "bench"), pool[:n_on], 64)
        print(f"{kind} remember: " + ", ".join(f"{k} {v['per_second']}/s" for k, v in res["remember"].items()),
              file=sys.stderr)
        with open_store(kind, pg_server, f"{kind}_read") as store:
            pre = PrecomputedEmbedder(table)
            loader = MemoryService(store, embedder=pre, options=Options(max_active=None))
            # What a recall hands out written as a server writes it: every 2 s, off the call (issue 30).
            served_options = Options(max_active=None, uses_every=2.0)
            reader = MemoryService(store, embedder=pre, options=served_options)
            words = MemoryService(store, embedder=None, options=served_options)
            # The meaning ranking without its centring and second (feedback) pass: what they cost.
            plain = MemoryService(store, embedder=pre, options=Options(max_active=None, uses_every=2.0, meaning_centering=0.0,
                                                                         feedback_memories=0))
            # Other people beside the measured one, as in any real database.
            for other in range(args.others):
                fill(loader, Place(f"other-{other}", "bench"), pool[: max(sizes)])
            for size in sizes:
                place = Place(f"reader-{size}", "bench")
                fill(loader, place, pool[:size])
                analyze(store)
                wait_for_quiet(args.max_load, args.quiet_wait)
                load = load_average()
                samples = time_calls(lambda i, p=place, svc=reader: svc.recall(p, qs[i % len(qs)], limit=5), args.recalls)
                res["recall"][str(size)] = {**percentiles(samples), "load_average": load}
                samples = time_calls(lambda i, p=place, svc=words: svc.recall(p, qs[i % len(qs)], limit=5), args.recalls)
                res["recall_words_only"][str(size)] = percentiles(samples)
                samples = time_calls(lambda i, p=place, svc=plain: svc.recall(p, qs[i % len(qs)], limit=5), args.recalls)
                res.setdefault("recall_plain_cosine", {})[str(size)] = percentiles(samples)
                print(f"{kind} recall at {size}: p50 {res['recall'][str(size)]['p50_ms']} "
                      f"p95 {res['recall'][str(size)]['p95_ms']} ms", file=sys.stderr)
        out[kind] = res
    return out


# ---------------------------------------------------------------- HTTP

@contextmanager
def served(database_url: str, workers: int, log_path: Path, keys: str | None = None) -> Iterator[tuple[str, str]]:
    """`memory-portal serve` on a free loopback port with the local model (its text encrypted with
    `keys` when given, as PostgreSQL requires); answers (base URL, API key)."""
    folder = tempfile.mkdtemp(prefix="bench-serve-")
    env = {
        **os.environ,
        "MEMORY_DATABASE_URL": database_url, "MEMORY_EMBEDDER": "local", "MEMORY_MAX_ACTIVE": "0",
        "MEMORY_SECRET_KEY": "bench-secret-key-not-for-production", "MEMORY_INSTANCE_PATH": folder,
        "MEMORY_API_RATE_LIMIT": "100000000/minute", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        **({"MEMORY_ENCRYPTION_KEYS": keys} if keys else {}),
    }
    exe = str(Path(sys.executable).with_name("memory-portal"))
    subprocess.run([exe, "db", "upgrade"], env=env, check=True, capture_output=True)
    subprocess.run([exe, "tenant", "create", "bench"], env=env, check=True, capture_output=True)
    key = subprocess.run(
        [exe, "api-key", "create", "--tenant", "bench", "--permission", "memories:read", "--permission", "memories:write"],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()
    try:
        with common_served(env, workers, log_path) as (base, _proc):
            yield base, key
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def tenant_scope(database_url: str) -> str:
    from portal.adapters.sql.engine import make_engine
    from portal.adapters.sql.tenants import Tenants

    engine = make_engine(database_url)
    try:
        found = Tenants(engine).find("bench")
        assert found is not None
        return found.id
    finally:
        engine.dispose()


def run_clients(clients: int, per_client: int, call: Any) -> tuple[list[float], float]:
    """`clients` threads, each making `per_client` calls of call(client, i, http); answers each call's
    milliseconds and the wall time."""
    import httpx

    samples: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []
    start = threading.Barrier(clients + 1)

    def worker(c: int) -> None:
        with httpx.Client(timeout=60) as http:
            call(c, -1, http)  # a warm connection before the clock starts
            start.wait()
            try:
                for i in range(per_client):
                    t0 = time.perf_counter_ns()
                    call(c, i, http)
                    samples[c].append((time.perf_counter_ns() - t0) / 1e6)
            except BaseException as exc:  # reported after the run
                errors.append(exc)

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return [s for per in samples for s in per], wall


def http_bench(args: argparse.Namespace, kind: str, pool: list[tuple[str, str]], vectors: np.ndarray,
               qs: list[str], pg_server: str | None) -> dict[str, Any]:
    from portal.adapters.cipher import FernetCipher, generate_key
    from portal.adapters.sql.engine import make_engine
    from portal.adapters.sql.store import SqlStore

    folder = tempfile.mkdtemp(prefix="bench-http-")
    url = f"sqlite:///{folder}/memory.db" if kind == "sqlite" else fresh_database(pg_server or "", "bench_http")
    out: dict[str, Any] = {"workers": args.workers, "clients": args.clients}
    # PostgreSQL holds no text in the clear (issue 26): the server and the loader share a key.
    keys = generate_key() if kind == "postgres" else None
    try:
        with served(url, args.workers, Path(folder) / "serve.log", keys) as (base, key):
            headers = {"Authorization": f"Bearer {key}"}
            scope = tenant_scope(url)
            # The person recalled from: 1,000 memories, loaded through the service with the model's
            # real vectors (precomputed), as a batch import would.
            engine = make_engine(url)
            table = {t: v for (t, _), v in zip(pool, vectors, strict=True)}
            cipher = FernetCipher.from_env_value(keys) if keys else None
            loader = MemoryService(SqlStore(engine, cipher=cipher), embedder=PrecomputedEmbedder(table),
                                   options=Options(max_active=None))
            fill(loader, Place("http-reader", scope), pool[: args.http_size])
            engine.dispose()

            writes = pool[-args.http_writes :]
            per = len(writes) // args.clients

            def remember(c: int, i: int, http: Any) -> None:
                text, kind_ = writes[c * per + max(i, 0)] if i >= 0 else ("warm up", "fact")
                r = http.post(f"{base}/api/v1/people/http-writer-{c}/memories", json={"text": text, "kind": kind_},
                              headers=headers)
                if r.status_code != 201:
                    raise RuntimeError(f"remember answered {r.status_code}")

            wait_for_quiet(args.max_load, args.quiet_wait)
            load = load_average()
            samples, wall = run_clients(args.clients, per, remember)
            out["remember"] = {"count": len(samples), "seconds": round(wall, 3),
                               "per_second": round(len(samples) / wall, 1), "latency": percentiles(samples),
                               "load_average": load}
            print(f"http {kind} remember {out['remember']['per_second']}/s", file=sys.stderr)

            def recall(c: int, i: int, http: Any) -> None:
                q = qs[(c * 7919 + max(i, 0)) % len(qs)]
                r = http.post(f"{base}/api/v1/people/http-reader/recall", json={"query": q, "limit": 5}, headers=headers)
                if r.status_code != 200 or not r.json()["items"]:
                    raise RuntimeError(f"recall answered {r.status_code}")

            for clients in sorted({1, args.clients}):
                wait_for_quiet(args.max_load, args.quiet_wait)
                load = load_average()
                samples, wall = run_clients(clients, args.http_recalls // clients, recall)
                out[f"recall_{clients}_clients"] = {**percentiles(samples), "per_second": round(len(samples) / wall, 1),
                                                    "memories": args.http_size, "load_average": load}
                print(f"http {kind} recall, {clients} clients: p50 {out[f'recall_{clients}_clients']['p50_ms']} "
                      f"p95 {out[f'recall_{clients}_clients']['p95_ms']} ms", file=sys.stderr)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("inprocess", "http"), default=None, help="run one half only")
    parser.add_argument("--stores", default="memory,sqlite,postgres", help="in-process stores (memory,sqlite,postgres)")
    parser.add_argument("--http-stores", default="sqlite,postgres", help="stores behind the HTTP API")
    parser.add_argument("--max-size", type=int, default=10_000, help="largest memories-per-person size to recall at")
    parser.add_argument("--recalls", type=int, default=300, help="timed recalls per size")
    parser.add_argument("--writes", type=int, default=2000, help="remembers with the embedder off (per mode)")
    parser.add_argument("--model-writes", type=int, default=500, help="remembers with the local model (per mode)")
    parser.add_argument("--others", type=int, default=2, help="other people of 10,000 memories each in the read store")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--http-size", type=int, default=1000, help="memories of the person recalled over HTTP")
    parser.add_argument("--http-writes", type=int, default=1600, help="remembers over HTTP, shared by the clients")
    parser.add_argument("--http-recalls", type=int, default=800, help="recalls over HTTP, shared by the clients")
    parser.add_argument("--database-url", default=None, help="a PostgreSQL server to use instead of a throwaway one")
    parser.add_argument("--max-load", type=float, default=1.5, help="wait for the load average to fall below this")
    parser.add_argument("--quiet-wait", type=float, default=0, help="wait at most this many seconds for it")
    parser.add_argument("--quick", action="store_true", help="small counts, to check the script runs")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.stores = [s for s in args.stores.split(",") if s]
    http_stores = [s for s in args.http_stores.split(",") if s]
    if args.quick:
        args.max_size, args.recalls, args.writes, args.model_writes, args.others = 1000, 50, 200, 64, 1
        args.http_writes, args.http_recalls, args.http_size = 160, 80, 200
    results: dict[str, Any] = {"machine": machine(), "settings": {k: v for k, v in vars(args).items() if k != "out"}}
    pool = sentences(POOL)
    qs = queries(200)
    vectors = embed_cached([t for t, _ in pool], "document", "pool")
    qvectors = embed_cached(qs, "query", "queries")
    needs_pg = ("postgres" in args.stores and args.only != "http") or ("postgres" in http_stores and args.only != "inprocess")
    with postgres(args.database_url) if needs_pg else _none() as pg_server:
        if args.only in (None, "inprocess"):
            results["in_process"] = in_process(args, pool, vectors, qs, qvectors, pg_server)
        if args.only in (None, "http"):
            results["http"] = {kind: http_bench(args, kind, pool, vectors, qs, pg_server) for kind in http_stores}
    write_results("latency", results, args.out)


@contextmanager
def _none() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    main()
