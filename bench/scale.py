"""Scale: recall for one person while the database grows to 1,000,000 memories over 1,000 people.

    python -m bench.scale                          # 10k → 100k → 1M (about 15 minutes on 2 cores)
    python -m bench.scale --totals 10000,100000    # a shorter run
    python -m bench.scale --database-url postgresql://...   # an existing server (a database
                                                   # named bench_scale is made and dropped on it)

PostgreSQL with pgvector only. Memories are loaded with COPY (binary) through psycopg 3 as rows of
`portal.adapters.sql.tables.memories`: synthetic sentences (their `search_text` made by the
product's own `search_text`), synthetic 384-dimension unit vectors, each person holding 1,000
memories, people's rows interleaved as if written over time. The load is incremental: 10 people
(10k rows), then up to 100, then up to 1,000; after each step `ANALYZE`, then the same recalls
for the same person (and for the newest person), through MemoryService on the SqlStore, with
the query vector precomputed (embedding time is measured in bench.latency, and is the same at
any scale). At the largest total, EXPLAIN (ANALYZE, BUFFERS) of each statement one recall sends
is captured for docs/benchmarks.md. The server's folder lives under /tmp and is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    PrecomputedEmbedder,
    fresh_database,
    load_average,
    machine,
    percentiles,
    postgres,
    queries,
    random_unit_vectors,
    sentences,
    time_calls,
    wait_for_quiet,
    write_results,
)
from portal.domain.options import Options
from portal.domain.text import search_text, words_key
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

PER_PERSON = 1000
SCOPE = "bench"
MODEL = "all-MiniLM-L6-v2"
COLUMNS = (
    "id", "owner_id", "scope", "revision", "text", "search_text", "words_key", "kind", "importance", "role", "origin",
    "sources", "channel", "seen", "pinned", "state", "last_op", "created_at", "updated_at", "last_used_at",
    "embedding_model", "embedding_dim", "embedding",
)
TYPES = (
    "varchar", "varchar", "varchar", "int4", "text", "text", "varchar", "varchar", "int4", "varchar", "varchar",
    "text", "varchar", "bool", "bool", "varchar", "varchar", "timestamptz", "timestamptz", "timestamptz",
    "varchar", "int4", "vector",
)


def owner(i: int) -> str:
    return f"person-{i:04d}"


@cache
def _texts() -> list[tuple[str, str, str, str]]:
    """(text, kind, search_text, words_key) of PER_PERSON distinct sentences, each person's set."""
    return [(t, k, search_text(t), words_key(t)) for t, k in sentences(PER_PERSON)]


def load_people(conninfo: str, first: int, last: int, seed: int, batch_people: int = 50) -> dict[str, Any]:
    """COPY the memories of people first..last-1 (PER_PERSON each), interleaved, in batches of
    `batch_people` people; answers rows and seconds."""
    import psycopg
    from pgvector.psycopg import register_vector

    texts = _texts()
    rng = np.random.default_rng(seed + first)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    rows = 0
    t0 = time.perf_counter()
    with psycopg.connect(conninfo) as conn:
        register_vector(conn)
        with conn.cursor() as cur:
            for lo in range(first, last, batch_people):
                hi = min(last, lo + batch_people)
                people = np.repeat(np.arange(lo, hi), PER_PERSON)
                which = np.tile(np.arange(PER_PERSON), hi - lo)
                order = rng.permutation(len(people))
                vectors = random_unit_vectors(len(people), seed=seed + lo)
                with cur.copy(f"COPY memories ({', '.join(COLUMNS)}) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types(list(TYPES))
                    for k in order:
                        p, j = int(people[k]), int(which[k])
                        text, kind, terms, key = texts[j]
                        at = start + timedelta(seconds=int(k))
                        copy.write_row((
                            f"{p:04d}-{j:04d}-{seed:x}", owner(p), SCOPE, 1, text, terms, key, kind, 3, None,
                            "asserted", "[]", "foreground", True, False, "active", "create", at, at, None,
                            MODEL, 384, vectors[k],
                        ))
                # Each person's place token, as the store writes one with their first memory.
                cur.execute(
                    "INSERT INTO memory_places (owner_id, scope, token) "
                    "SELECT DISTINCT owner_id, scope, md5(owner_id) FROM memories "
                    "WHERE owner_id = ANY(%s) ON CONFLICT DO NOTHING",
                    ([owner(p) for p in range(lo, hi)],),
                )
                conn.commit()
                rows += len(people)
                print(f"  loaded people {lo}..{hi - 1} ({rows} rows, {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return {"rows": rows, "seconds": round(time.perf_counter() - t0, 1)}


def analyze(conninfo: str) -> None:
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("ANALYZE memories")


def database_size(conninfo: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(conninfo) as conn:
        row = conn.execute(
            "SELECT count(*), pg_size_pretty(pg_total_relation_size('memories')), pg_total_relation_size('memories'),"
            " pg_size_pretty(pg_database_size(current_database())) FROM memories"
        ).fetchone()
        indexes = conn.execute(
            "SELECT indexrelname, pg_size_pretty(pg_relation_size(indexrelid)) FROM pg_stat_user_indexes"
            " WHERE relname = 'memories' ORDER BY indexrelname"
        ).fetchall()
    assert row is not None
    return {"rows": row[0], "memories_table": row[1], "memories_bytes": row[2], "database": row[3],
            "indexes": dict(indexes)}


def capture_plans(engine: Any, service: MemoryService, place: Place, query: str) -> list[dict[str, str]]:
    """EXPLAIN (ANALYZE, BUFFERS) of each SELECT and UPDATE one recall sends, with its own parameters."""
    from sqlalchemy import event

    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        service.recall(place, query, limit=5)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    plans = []
    with engine.connect() as conn:
        for statement, parameters in seen:
            head = statement.lstrip().split(None, 1)[0].upper()
            # An UPDATE is explained too (marking the hits used); the rollback below undoes it.
            if head not in ("SELECT", "UPDATE") or statement.lstrip().startswith("SELECT pg_advisory"):
                continue
            cursor = conn.connection.dbapi_connection.cursor()
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
            plan = _VECTOR_LITERAL.sub("'[...384 numbers...]'::vector", "\n".join(r[0] for r in cursor.fetchall()))
            plans.append({"statement": _short(statement), "plan": plan})
        conn.rollback()
    return plans


_VECTOR_LITERAL = re.compile(r"'\[[-0-9.e,+ ]+\]'::vector")


def _short(statement: str) -> str:
    """The statement without the vector literal's noise (it is a bound parameter anyway)."""
    return " ".join(statement.split())


def measure(service: MemoryService, place: Place, qs: list[str], recalls: int) -> dict[str, Any]:
    samples = time_calls(lambda i: service.recall(place, qs[i % len(qs)], limit=5), recalls, warmup=20)
    hits = service.recall(place, qs[0], limit=5, mark=False)
    return {**percentiles(samples), "hits": len(hits)}


def run(args: argparse.Namespace, conninfo_server: str) -> dict[str, Any]:
    from sqlalchemy.engine import make_url

    from portal.adapters.sql.engine import make_engine
    from portal.adapters.sql.migrate import upgrade
    from portal.adapters.sql.store import SqlStore

    url = fresh_database(conninfo_server, "bench_scale")
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    engine = make_engine(url)
    upgrade(engine)
    qs = queries(200)
    qvectors = random_unit_vectors(len(qs), seed=99)
    embedder = PrecomputedEmbedder(dict(zip(qs, qvectors, strict=True)))
    service = MemoryService(SqlStore(engine), embedder=embedder, options=Options(max_active=None))
    # Without the recall cache: every recall reads the person's memories, as the first recall
    # after a write to them does.
    cold = MemoryService(SqlStore(engine, cache_bytes=0), embedder=embedder, options=Options(max_active=None))
    words_only = MemoryService(SqlStore(engine), embedder=None, options=Options(max_active=None))
    out: dict[str, Any] = {"per_person": PER_PERSON, "steps": []}
    loaded_people = 0
    for total in args.totals:
        people = total // PER_PERSON
        load = load_people(conninfo, loaded_people, people, args.seed)
        loaded_people = people
        t0 = time.perf_counter()
        analyze(conninfo)
        step: dict[str, Any] = {"total": total, "people": people, "load": load,
                                "analyze_seconds": round(time.perf_counter() - t0, 1), "size": database_size(conninfo)}
        wait_for_quiet(args.max_load, args.quiet_wait)
        step["load_average"] = load_average()
        first, newest = Place(owner(0), SCOPE), Place(owner(people - 1), SCOPE)
        step["recall_first_person"] = measure(service, first, qs, args.recalls)
        step["recall_newest_person"] = measure(service, newest, qs, args.recalls)
        step["recall_words_only_first_person"] = measure(words_only, first, qs, args.recalls)
        step["recall_uncached_first_person"] = measure(cold, first, qs, args.recalls)
        print(f"total {total}: recall p50 {step['recall_first_person']['p50_ms']} p95 "
              f"{step['recall_first_person']['p95_ms']} ms (newest person p95 {step['recall_newest_person']['p95_ms']})",
              file=sys.stderr)
        out["steps"].append(step)
    out["plans"] = capture_plans(engine, cold, Place(owner(0), SCOPE), qs[3])
    out["plans_cached"] = capture_plans(engine, service, Place(owner(0), SCOPE), qs[3])
    with engine.connect() as conn:
        out["server"] = {
            name: conn.exec_driver_sql(f"SHOW {name}").scalar()
            for name in ("server_version", "shared_buffers", "work_mem", "effective_cache_size",
                         "max_parallel_workers_per_gather")
        }
        out["server"]["pgvector"] = conn.exec_driver_sql("SELECT extversion FROM pg_extension WHERE extname = 'vector'").scalar()
    engine.dispose()
    if not args.keep:
        import psycopg

        with psycopg.connect(conninfo_server.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS bench_scale WITH (FORCE)")
    first_p95 = [s["recall_first_person"]["p95_ms"] for s in out["steps"]]
    cold_p95 = [s["recall_uncached_first_person"]["p95_ms"] for s in out["steps"]]
    out["flatness"] = {"p95_ms_by_total": dict(zip([str(t) for t in args.totals], first_p95, strict=True)),
                       "largest_over_smallest": round(first_p95[-1] / first_p95[0], 3),
                       "uncached_p95_ms_by_total": dict(zip([str(t) for t in args.totals], cold_p95, strict=True)),
                       "uncached_largest_over_smallest": round(cold_p95[-1] / cold_p95[0], 3)}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--totals", default="10000,100000,1000000", help="comma-separated totals to measure at")
    parser.add_argument("--recalls", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--database-url", default=None, help="a PostgreSQL server (else a throwaway one under /tmp)")
    parser.add_argument("--data-dir", default=None, help="where the throwaway server keeps its files (default /tmp/...)")
    parser.add_argument("--keep", action="store_true", help="keep the bench_scale database (with --database-url)")
    parser.add_argument("--max-load", type=float, default=1.5)
    parser.add_argument("--quiet-wait", type=float, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.totals = [int(t) for t in args.totals.split(",")]
    if any(t % PER_PERSON for t in args.totals) or args.totals != sorted(args.totals):
        parser.error("totals are increasing multiples of 1000")
    free = shutil.disk_usage(args.data_dir or "/tmp").free
    needed = args.totals[-1] * 3_500  # about 3.5 kB a row with its indexes and WAL, measured at 1M
    if args.database_url is None and free < needed:
        parser.error(f"{free / 1e9:.1f} GB free under /tmp, about {needed / 1e9:.1f} GB needed")
    results: dict[str, Any] = {"machine": machine(), "settings": {k: v for k, v in vars(args).items() if k != "out"}}
    with postgres(args.database_url, folder=args.data_dir) as server:
        results["scale"] = run(args, server)
    write_results("scale", results, args.out)
    _ = json


if __name__ == "__main__":
    main()
