"""What an erasure's cleaning up costs: forget latency, the time until the store has settled, and
recall while another person forgets (issue 26).

Every erasure ends in the store's cleaning up after its commit: on SQLite a write-ahead log
checkpoint (TRUNCATE), on PostgreSQL a VACUUM of the tables it touched, run by the store's
background thread (the janitor). In process, on each store, with 100 people of 1,000 memories each
(the local model's real vectors computed beforehand and served by a table: no model runs while
timing):

1. one person forgets `--forgets` of their memories one after another through
   `MemoryService.forget`: each forget's latency, then the time until `store.settle()` returns;
   then `--singles` more, each followed by `settle()` (what one forget leaves to clean);
2. 4 threads recall for another person (limit 5) for `--seconds`, with and without a 5th thread
   forgetting 2 memories a second for a third person; recalls per second, recall latency, and the
   stream's forget latency. Each round runs both phases (in alternating order), and the store is
   settled after each phase, so a phase never meets the one before's cleaning up.

Only what both sides of the change have is called (`remember_many`, `forget`, `recall`,
`store.settle`), so the same script measures the code before it:

    python -m bench.erasure [--stores sqlite,postgres] [--quick]
    PYTHONPATH=/tmp/base:. python -P -m bench.erasure --out /tmp/erasure-base.json

(`-P`: the current folder does not come first, so `portal` is the other tree's; `portal_file` in
the results says which one ran.) Prints JSON and writes bench/results/erasure.json.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import portal
from bench.common import (
    PrecomputedEmbedder,
    embed_cached,
    load_average,
    machine,
    median,
    percentiles,
    postgres,
    queries,
    sentences,
    wait_for_quiet,
    write_results,
)
from bench.latency import open_store
from portal.domain.options import Options
from portal.domain.types import Place, Saved
from portal.services.memory_service import MemoryService

POOL = 10_000
RECALLERS = 4
FORGETS_PER_SECOND = 2.0


def load_people(service: MemoryService, pool: list[tuple[str, str]], people: int, per_person: int) -> list[list[str]]:
    """Every person's memories, batched as an import would put them; answers each person's ids."""
    ids: list[list[str]] = []
    for p in range(people):
        start = (p * 397) % (len(pool) - per_person)  # each person their own slice of the pool
        texts = [t for t, _ in pool[start : start + per_person]]
        mine: list[str] = []
        for i in range(0, len(texts), 500):
            saved = service.remember_many(Place(f"person-{p}", "bench"), texts[i : i + 500], on_duplicate="keep")
            mine.extend(s.memory.id for s in saved if isinstance(s, Saved))
        ids.append(mine)
    return ids


def quiet_database(store: Any) -> None:
    """After loading: what a database in use would have done long before (PostgreSQL: VACUUM
    ANALYZE, so neither autovacuum nor missing statistics land in a measurement; SQLite: the log
    checkpointed), the same on both sides of the change."""
    with store.engine.connect() as conn:
        if getattr(store, "postgres", False):
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM ANALYZE")
        else:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.commit()


def vacuums(store: Any) -> dict[str, int] | None:
    """PostgreSQL: how many times `memories` was vacuumed so far, by a VACUUM statement (the
    janitor's) and by autovacuum (each VACUUM reports its own count as it ends)."""
    if not getattr(store, "postgres", False):
        return None
    with store.engine.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
        row = conn.exec_driver_sql(
            "SELECT vacuum_count, autovacuum_count FROM pg_stat_user_tables WHERE relname = 'memories'").one()
    return {"vacuum": int(row[0]), "autovacuum": int(row[1])}


def since(before: dict[str, int] | None, store: Any) -> dict[str, int] | None:
    after = vacuums(store)
    return None if before is None or after is None else {k: after[k] - before[k] for k in after}


def timed_settle(store: Any) -> dict[str, Any]:
    started = time.perf_counter()
    done = store.settle(600.0)
    return {"settle_s": round(time.perf_counter() - started, 3), "settled": bool(done)}


def forget_run(service: MemoryService, store: Any, place: Place, ids: list[str]) -> dict[str, Any]:
    """`ids` forgotten one after another; then the store left to finish its cleaning up."""
    samples: list[float] = []
    before = vacuums(store)
    started = time.perf_counter()
    for memory_id in ids:
        t0 = time.perf_counter_ns()
        service.forget(place, memory_id)
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    wall = time.perf_counter() - started
    return {"forgets": percentiles(samples), "forgets_wall_s": round(wall, 3), **timed_settle(store),
            "vacuums_of_memories": since(before, store)}


def single_forgets(service: MemoryService, store: Any, place: Place, ids: list[str]) -> dict[str, Any]:
    """One forget at a time, each followed by the store's cleaning up: what one forget leaves to do."""
    forgets: list[float] = []
    settles: list[float] = []
    for memory_id in ids:
        t0 = time.perf_counter_ns()
        service.forget(place, memory_id)
        t1 = time.perf_counter_ns()
        store.settle(600.0)
        forgets.append((t1 - t0) / 1e6)
        settles.append((time.perf_counter_ns() - t1) / 1e6)
    return {"forget": percentiles(forgets), "settle": percentiles(settles)}


def recall_phase(service: MemoryService, store: Any, reader: Place, qs: list[str], seconds: float,
                 forgetter: Place | None, to_forget: Iterator[str]) -> dict[str, Any]:
    """RECALLERS threads recalling for `reader` during `seconds`, and, when `forgetter` is given,
    one more forgetting for them FORGETS_PER_SECOND times a second on a fixed schedule."""
    recalls: list[list[float]] = [[] for _ in range(RECALLERS)]
    forgets: list[float] = []
    errors: list[BaseException] = []
    start = threading.Barrier(RECALLERS + 2)
    stop = threading.Event()

    def recaller(r: int) -> None:
        start.wait()
        i = r * 50
        try:
            while not stop.is_set():
                t0 = time.perf_counter_ns()
                service.recall(reader, qs[i % len(qs)], limit=5)
                recalls[r].append((time.perf_counter_ns() - t0) / 1e6)
                i += 1
        except BaseException as exc:  # reported after the phase
            errors.append(exc)

    def eraser() -> None:
        start.wait()
        if forgetter is None:
            return
        begun = time.perf_counter()
        k = 0
        try:
            while not stop.is_set():
                due = begun + k / FORGETS_PER_SECOND
                if (wait := due - time.perf_counter()) > 0 and stop.wait(wait):
                    break
                t0 = time.perf_counter_ns()
                service.forget(forgetter, next(to_forget))
                forgets.append((time.perf_counter_ns() - t0) / 1e6)
                k += 1
        except BaseException as exc:
            errors.append(exc)

    before = vacuums(store)
    threads = [threading.Thread(target=recaller, args=(r,)) for r in range(RECALLERS)]
    threads.append(threading.Thread(target=eraser))
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    if errors:
        raise errors[0]
    done = [s for per in recalls for s in per]
    out: dict[str, Any] = {"seconds": round(wall, 3), "recalls_per_second": round(len(done) / wall, 1),
                           "recall": percentiles(done)}
    if forgetter is not None:
        out["forgets"] = percentiles(forgets)
    out.update(timed_settle(store))  # the next phase starts with nothing left to clean
    out["vacuums_of_memories"] = since(before, store)
    return out


def measure(kind: str, args: argparse.Namespace, pool: list[tuple[str, str]], table: dict[str, Any],
            qs: list[str], pg_server: str | None) -> dict[str, Any]:
    with open_store(kind, pg_server, "erasure") as store:
        service = MemoryService(store, embedder=PrecomputedEmbedder(table), options=Options(max_active=None))
        t0 = time.perf_counter()
        ids = load_people(service, pool, args.people, args.per_person)
        quiet_database(store)
        out: dict[str, Any] = {"people": args.people, "memories_each": args.per_person,
                               "load_s": round(time.perf_counter() - t0, 1)}
        print(f"{kind}: {args.people} x {args.per_person} memories loaded in {out['load_s']} s", file=sys.stderr)

        # 1. One person forgets, one memory after another.
        rng = random.Random(26)
        mine = rng.sample(ids[0], args.forgets)
        taken = set(mine)
        wait_for_quiet(args.max_load, args.quiet_wait)
        out["forget"] = {"load_average": load_average(), **forget_run(service, store, Place("person-0", "bench"), mine)}
        f = out["forget"]
        print(f"{kind} forget: p50 {f['forgets']['p50_ms']} p95 {f['forgets']['p95_ms']} max {f['forgets']['max_ms']} ms, "
              f"settled in {f['settle_s']} s", file=sys.stderr)
        out["forget_then_settle"] = single_forgets(service, store, Place("person-0", "bench"),
                                                   [i for i in ids[0] if i not in taken][: args.singles])
        print(f"{kind} one forget then settle: settle p50 {out['forget_then_settle']['settle']['p50_ms']} ms",
              file=sys.stderr)

        # 2. Recall for person-1 with and without person-2 forgetting twice a second.
        reader, forgetter = Place("person-1", "bench"), Place("person-2", "bench")
        stream = iter(rng.sample(ids[2], len(ids[2])))
        for i in range(20):  # the reader's place in the recall cache, as in any running process
            service.recall(reader, qs[i], limit=5)
        rounds: list[dict[str, Any]] = []
        for r in range(args.rounds):
            wait_for_quiet(args.max_load, args.quiet_wait)
            this: dict[str, Any] = {"load_average": load_average()}
            for phase in (("without", "with") if r % 2 == 0 else ("with", "without")):
                this[f"{phase}_forgets"] = recall_phase(service, store, reader, qs, args.seconds,
                                                        forgetter if phase == "with" else None, stream)
                p = this[f"{phase}_forgets"]
                print(f"{kind} round {r} {phase} forgets: {p['recalls_per_second']} recalls/s, p50 "
                      f"{p['recall']['p50_ms']} p95 {p['recall']['p95_ms']} ms, settled in {p['settle_s']} s",
                      file=sys.stderr)
            rounds.append(this)
        out["recall_rounds"] = rounds
        out["recall"] = {phase: pooled([r[f"{phase}_forgets"] for r in rounds]) for phase in ("without", "with")}
        return out


def pooled(phases: list[dict[str, Any]]) -> dict[str, Any]:
    """The rounds' phases of one kind taken together: recalls per second over their whole time,
    the median of their percentiles."""
    seconds = sum(p["seconds"] for p in phases)
    count = sum(p["recall"]["n"] for p in phases)
    out: dict[str, Any] = {
        "recalls_per_second": round(count / seconds, 1),
        "recall_p50_ms": round(median([p["recall"]["p50_ms"] for p in phases]), 3),
        "recall_p95_ms": round(median([p["recall"]["p95_ms"] for p in phases]), 3),
        "settle_s_max": max(p["settle_s"] for p in phases),
    }
    if "forgets" in phases[0]:
        out["forget_p50_ms"] = round(median([p["forgets"]["p50_ms"] for p in phases]), 3)
        out["forget_p95_ms"] = round(median([p["forgets"]["p95_ms"] for p in phases]), 3)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.erasure", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--people", type=int, default=100)
    parser.add_argument("--per-person", type=int, default=1000)
    parser.add_argument("--forgets", type=int, default=200, help="memories one person forgets one after another")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each recall phase")
    parser.add_argument("--singles", type=int, default=20, help="forgets each followed by settle()")
    parser.add_argument("--rounds", type=int, default=4, help="recall rounds (each: without and with forgets)")
    parser.add_argument("--database-url", default=None, help="a PostgreSQL server instead of a throwaway one")
    parser.add_argument("--max-load", type=float, default=1.5, help="wait for the load average to fall below this")
    parser.add_argument("--quiet-wait", type=float, default=0, help="wait at most this many seconds for it")
    parser.add_argument("--quick", action="store_true", help="small counts, to check the script runs")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.people, args.per_person, args.forgets, args.seconds, args.rounds, args.singles = 5, 200, 20, 2.0, 2, 5
    stores = [s for s in args.stores.split(",") if s]
    pool = sentences(POOL)
    qs = queries(200)
    table = dict(zip([t for t, _ in pool], embed_cached([t for t, _ in pool], "document", "pool"), strict=True))
    table.update(zip(qs, embed_cached(qs, "query", "queries"), strict=True))
    results: dict[str, Any] = {"machine": machine(), "portal_file": portal.__file__,
                               "settings": {k: v for k, v in vars(args).items() if k != "out"}}
    print(f"portal from {portal.__file__}", file=sys.stderr)
    with postgres(args.database_url) if "postgres" in stores else nothing() as pg_server:
        if pg_server is not None:
            results["machine"]["postgres"] = server_version(pg_server)
        for kind in stores:
            results[kind] = measure(kind, args, pool, table, qs, pg_server)
    write_results("erasure", results, args.out)


def server_version(url: str) -> str:
    from portal.adapters.sql.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return str(conn.exec_driver_sql(
                "SELECT current_setting('server_version') || ', pgvector ' || default_version || ', shared_buffers '"
                " || current_setting('shared_buffers') "
                "FROM pg_available_extensions WHERE name = 'vector'").scalar())
    finally:
        engine.dispose()


@contextmanager
def nothing() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    main()
