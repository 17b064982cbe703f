"""What migration 0012 (every key of a person's rows led by the owner) costs a running database:
how long the upgrade takes at a given size, what it does to a SQLite file's size, and whether a
lookup by memory id stays as fast after it (it goes through the new primary key).

On each SQL store: a database migrated to 0011, filled with `--people` people holding `--per-person`
memories each (synthetic sentences, random 384-dimension vectors, one earlier wording each, rows
written straight to the tables), then `get_many` of one id timed `--calls` times at 0011, the
upgrade to head timed, and the same lookups timed again. Prints JSON and writes
bench/results/rekey.json.

    python -m bench.rekey [--stores sqlite,postgres] [--people 100] [--per-person 1000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from datetime import UTC, datetime
from typing import Any

from bench.common import load_average, machine, percentiles, postgres, random_unit_vectors, write_results
from bench.latency import open_store
from portal.adapters.sql.migrate import upgrade
from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.tables import memories, memory_revisions
from portal.domain.types import Place


def engine_file(engine: Any) -> str | None:
    return str(engine.url.database) if engine.dialect.name == "sqlite" else None


def on_disk_mb(path: str) -> float:
    """The SQLite file and its write-ahead log, in MB."""
    return round(sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p)) / 1e6, 1)


def fill(engine: Any, people: int, per_person: int) -> list[tuple[Place, str]]:
    """Rows straight into the tables (the service's checks are not what is measured); answers a
    sample of (place, id) to look up."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    vectors = random_unit_vectors(per_person)
    picked: list[tuple[Place, str]] = []
    for p in range(people):
        owner = f"person-{p:05d}"
        rows, wordings = [], []
        for i in range(per_person):
            memory_id = os.urandom(16).hex()
            text = f"Keeps note {i} about the garden of {owner}"
            rows.append({
                "id": memory_id, "owner_id": owner, "scope": "default", "revision": 2, "text": text,
                "search_text": text.lower(), "words_key": os.urandom(16).hex(), "kind": "fact", "importance": 3,
                "origin": "asserted", "sources": "[]", "channel": "foreground", "seen": True, "pinned": False,
                "state": "active", "last_op": "update", "created_at": now, "updated_at": now,
                "embedding_model": "bench", "embedding_dim": 384, "embedding": vectors[i],
            })
            wordings.append({
                "memory_id": memory_id, "revision": 1, "owner_id": owner, "scope": "default", "text": text[:-1],
                "kind": "fact", "importance": 3, "origin": "asserted", "sources": "[]", "op": "create",
                "written_at": now,
            })
        with engine.begin() as conn:
            conn.execute(memories.insert(), rows)
            conn.execute(memory_revisions.insert(), wordings)
        picked += [(Place(owner, "default"), r["id"]) for r in random.Random(p).sample(rows, min(5, len(rows)))]
    return picked


def lookups(engine: Any, picked: list[tuple[Place, str]], calls: int) -> dict[str, float]:
    store = SqlStore(engine, cache_bytes=0)
    samples = []
    for i in range(calls + 10):
        place, memory_id = picked[i % len(picked)]
        started = time.perf_counter()
        with store.read(place) as tx:
            assert [m.id for m in tx.get_many([memory_id])] == [memory_id]
        if i >= 10:
            samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def measure(kind: str, args: argparse.Namespace, pg_server: str | None) -> dict[str, Any]:
    with open_store(kind, pg_server, "rekey", revision="0011") as store:
        engine, path = store.engine, engine_file(store.engine)
        started = time.perf_counter()
        picked = fill(engine, args.people, args.per_person)
        filled_s = time.perf_counter() - started
        before = lookups(engine, picked, args.calls)
        size_before = on_disk_mb(path) if path else None
        started = time.perf_counter()
        upgrade(engine)
        upgrade_s = time.perf_counter() - started
        after = lookups(engine, picked, args.calls)
        result: dict[str, Any] = {
            "memories": args.people * args.per_person, "revisions": args.people * args.per_person,
            "fill_s": round(filled_s, 1), "upgrade_s": round(upgrade_s, 2),
            "get_by_id_ms_before": before, "get_by_id_ms_after": after,
        }
        if path:
            result["file_mb_before"], result["file_mb_after"] = size_before, on_disk_mb(path)
        print(f"{kind}: {result}", file=sys.stderr)
        return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--people", type=int, default=100)
    parser.add_argument("--per-person", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--postgres-url", default=os.environ.get("MEMORY_TEST_DATABASE_URL"))
    parser.add_argument("--quick", action="store_true", help="small counts, to check the script")
    args = parser.parse_args(argv)
    if args.quick:
        args.people, args.per_person, args.calls = 5, 50, 20
    stores = [s for s in args.stores.split(",") if s]
    results: dict[str, Any] = {"machine": machine(), "load_average_at_start": load_average(),
                               "people": args.people, "per_person": args.per_person, "stores": {}}
    for kind in stores:
        if kind == "postgres":
            with postgres(args.postgres_url) as server:
                results["stores"][kind] = measure(kind, args, server)
        else:
            results["stores"][kind] = measure(kind, args, None)
    write_results("rekey" if not args.quick else "rekey-quick", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
