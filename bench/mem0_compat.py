"""mem0's own client against our server: what the mem0-compatible routes cost beside our own API.

    python -m bench.mem0_compat                   # 100 and 1,000 memories, 200 calls each (about 2 minutes)
    python -m bench.mem0_compat --quick           # 100 memories, 50 calls, to check the script
    python -m bench.mem0_compat --profile 50      # and profile 50 searches of each route in process

The server is started as bench.latency's HTTP mode starts it (`memory-portal serve`, gunicorn, 2
workers, SQLite, the local model loaded in each worker, one tenant and one key). Readers of 100 and
1,000 memories are loaded through the service with the model's real vectors, precomputed, as
bench.latency loads its HTTP reader. Then, in one run and interleaved call by call (the order
turning each round, so every variant meets the same machine), four callers make the same calls:

- mem0: mem0ai's `MemoryClient(api_key, host)` (MEM0_TELEMETRY=False, MEM0_DIR a temp folder):
  `add([{"role": "user", "content": text}], user_id=..., infer=False)` and
  `search(query, filters={"user_id": ...}, top_k=5)`;
- ours: portal.client's `MemoryClient`: `remember(person, text)` and `recall(person, query, limit=5)`;
- mem0 route and our route: the same two requests sent by plain httpx (one keep-alive connection
  each), so that what the clients do on their side is kept apart from what the routes cost.

The data are bench.peers': its sentences (seed 23) and its 200 queries (seed 31). Adds go to one
new person per caller, the same sentences in the same order; searches go to the same reader. The
server's model embeds each added text and each query, as in use. Results (percentiles in ms, the
median of the per-round differences) go to bench/results/mem0_compat.json.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    PrecomputedEmbedder,
    embed_cached,
    load_average,
    machine,
    percentiles,
    queries,
    sentences,
    wait_for_quiet,
    write_results,
)
from bench.latency import fill, served, tenant_scope
from portal.client import MemoryClient as OurClient
from portal.domain.options import Options
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

TOP = 5
Call = Callable[[int], Any]


def interleaved(calls: int, variants: dict[str, Call], warmup: int) -> dict[str, Any]:
    """Each variant's call i, round after round (the order turning by one each round), `warmup`
    untimed rounds first. Answers each variant's percentiles and, beside ours, the median of the
    per-round differences (variant minus ours, ms)."""
    names = list(variants)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for i in range(-warmup, calls):
        turn = i % len(names)
        for name in names[turn:] + names[:turn]:
            started = time.perf_counter_ns()
            variants[name](i)
            if i >= 0:
                samples[name].append((time.perf_counter_ns() - started) / 1e6)
    out: dict[str, Any] = {n: percentiles(s) for n, s in samples.items()}
    for theirs, mine in (("mem0", "ours"), ("mem0_route", "our_route")):
        diffs = sorted(a - b for a, b in zip(samples[theirs], samples[mine], strict=True))
        out[f"{theirs}_minus_{mine}_median_ms"] = round(diffs[len(diffs) // 2], 3)
    return out


def callers(base: str, key: str, make_mem0: Callable[..., Any]) -> tuple[Any, OurClient, httpx.Client, httpx.Client]:
    mem0 = make_mem0(api_key=key, host=base)
    ours = OurClient(base, key, timeout=60)
    mem0_http = httpx.Client(base_url=base, timeout=60, headers={"Authorization": f"Token {key}"})
    our_http = httpx.Client(base_url=base + "/api/v1", timeout=60, headers={"Authorization": f"Bearer {key}"})
    return mem0, ours, mem0_http, our_http


def checked(response: httpx.Response, status: int) -> httpx.Response:
    if response.status_code != status:
        raise RuntimeError(f"{response.request.url.path} answered {response.status_code}")
    return response


def adds(clients: tuple[Any, OurClient, httpx.Client, httpx.Client], texts: list[str], warmup: int, tag: str
         ) -> dict[str, Call]:
    mem0, ours, mem0_http, our_http = clients

    def text(i: int) -> str:
        return texts[i + warmup]  # the warm-up rounds are numbered from -warmup

    return {
        "mem0": lambda i: mem0.add([{"role": "user", "content": text(i)}], user_id=f"add-mem0-{tag}", infer=False),
        "ours": lambda i: ours.remember(f"add-ours-{tag}", text(i)),
        "mem0_route": lambda i: checked(mem0_http.post("/v3/memories/add/", json={
            "messages": [{"role": "user", "content": text(i)}], "user_id": f"add-mem0-route-{tag}", "infer": False}), 200),
        "our_route": lambda i: checked(our_http.post(f"/people/add-our-route-{tag}/memories", json={"text": text(i)}), 201),
    }


def searches(clients: tuple[Any, OurClient, httpx.Client, httpx.Client], person: str, qs: list[str]) -> dict[str, Call]:
    mem0, ours, mem0_http, our_http = clients

    def query(i: int) -> str:
        return qs[i % len(qs)]

    return {
        "mem0": lambda i: mem0.search(query(i), filters={"user_id": person}, top_k=TOP),
        "ours": lambda i: ours.recall(person, query(i), limit=TOP),
        "mem0_route": lambda i: checked(mem0_http.post("/v3/memories/search/", json={
            "query": query(i), "filters": {"user_id": person}, "top_k": TOP}), 200),
        "our_route": lambda i: checked(our_http.post(f"/people/{person}/recall", json={"query": query(i), "limit": TOP}), 200),
    }


def found(clients: tuple[Any, OurClient, httpx.Client, httpx.Client], person: str, qs: list[str]) -> dict[str, float]:
    """Hits per search (mean over the queries), each client's: the two answer as many."""
    mem0, ours = clients[0], clients[1]
    sample = qs[:20]
    return {"mem0": sum(len(mem0.search(q, filters={"user_id": person}, top_k=TOP)["results"]) for q in sample) / len(sample),
            "ours": sum(len(ours.recall(person, q, limit=TOP)) for q in sample) / len(sample)}


def profile(env: dict[str, str], key: str, person: str, qs: list[str], count: int,
            make_mem0: Callable[..., Any]) -> dict[str, str]:
    """`count` searches through each route, in process (the app on the same database, httpx's WSGI
    transport), under pyinstrument when it is installed, else cProfile: where each route's time goes."""
    from portal.app import create_app  # the app itself, for the in-process profile only
    from portal.bootstrap import build_runtime
    from portal.config import load_config

    app = create_app(runtime=build_runtime(load_config(environ=env)))
    transport = httpx.WSGITransport(app=app)  # type: ignore[arg-type]
    mem0 = make_mem0(api_key=key, host="http://portal", client=httpx.Client(transport=transport, timeout=60))
    ours = OurClient("http://portal", key, transport=transport)
    runs = {"mem0": lambda i: mem0.search(qs[i % len(qs)], filters={"user_id": person}, top_k=TOP),
            "ours": lambda i: ours.recall(person, qs[i % len(qs)], limit=TOP)}
    for i in range(10):
        for run in runs.values():
            run(i)
    try:
        from pyinstrument import Profiler  # optional: not a dependency of the benchmarks
    except ImportError:
        Profiler = None  # noqa: N806
    # One profiler per route, started and stopped around each call, the routes taking turns: both
    # meet the same machine (the sessions of a profiler add up).
    profilers = {name: Profiler(interval=0.0001) if Profiler else cProfile.Profile() for name in runs}
    for i in range(count):
        for name in (list(runs) if i % 2 == 0 else list(runs)[::-1]):
            prof = profilers[name]
            if Profiler:
                prof.start()
            else:
                prof.enable()
            runs[name](i)
            if Profiler:
                prof.stop()
            else:
                prof.disable()
    out: dict[str, str] = {}
    for name, prof in profilers.items():
        if Profiler:
            out[name] = prof.output_text(show_all=False)
        else:
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(40)
            out[name] = text.getvalue()
        print(f"--- {name}: {count} searches\n{out[name]}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.mem0_compat", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000", help="memories of the person searched (one reader each)")
    parser.add_argument("--calls", type=int, default=200, help="timed calls of each caller, per part")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--profile", type=int, default=0, help="profile this many searches of each route in process")
    parser.add_argument("--max-load", type=float, default=1.5, help="wait for the load average to fall below this")
    parser.add_argument("--quiet-wait", type=float, default=0, help="wait at most this many seconds for it")
    parser.add_argument("--quick", action="store_true", help="small counts, to check the script runs")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.calls = "100", 50
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results: dict[str, Any] = {"machine": machine(), "settings": {k: str(v) for k, v in vars(args).items() if k != "out"}}
    # bench.peers' data: its 1,000 sentences (seed 23; a shorter list is their beginning) and its 200 queries.
    readers = sentences(max(*sizes, args.calls + args.warmup), seed=23)
    texts = [t for t, _ in readers]
    table = dict(zip(texts, embed_cached(texts, "document", "peers-sentences"), strict=True))
    qs = queries(200, seed=31)
    folder = tempfile.mkdtemp(prefix="bench-mem0compat-")
    os.environ["MEM0_TELEMETRY"] = "False"  # mem0 reads both at import: set before it
    os.environ["MEM0_DIR"] = folder
    from mem0 import MemoryClient  # imported only now, after the two variables above

    url = f"sqlite:///{folder}/memory.db"
    try:
        with served(url, args.workers, Path(folder) / "serve.log") as (base, key):
            from portal.adapters.sql.engine import make_engine  # as bench.latency's loader
            from portal.adapters.sql.store import SqlStore

            scope = tenant_scope(url)
            engine = make_engine(url)
            loader = MemoryService(SqlStore(engine), embedder=PrecomputedEmbedder(table), options=Options(max_active=None))
            for size in sizes:
                fill(loader, Place(f"reader-{size}", scope), readers[:size])
            engine.dispose()
            clients = callers(base, key, MemoryClient)
            wait_for_quiet(args.max_load, args.quiet_wait)
            load = load_average()
            part = interleaved(args.calls, adds(clients, texts, args.warmup, "1"), args.warmup)
            results["add"] = {**part, "load_average": load}
            print(f"add: {_line(results['add'])}", file=sys.stderr)
            for size in sizes:
                person = f"reader-{size}"
                wait_for_quiet(args.max_load, args.quiet_wait)
                load = load_average()
                part = interleaved(args.calls, searches(clients, person, qs), args.warmup)
                results[f"search_{size}"] = {**part, "hits_per_search": found(clients, person, qs), "load_average": load}
                print(f"search at {size}: {_line(part)}", file=sys.stderr)
            if args.profile:
                env = {**os.environ, "MEMORY_DATABASE_URL": url, "MEMORY_EMBEDDER": "local", "MEMORY_MAX_ACTIVE": "0",
                       "MEMORY_SECRET_KEY": "bench-secret-key-not-for-production", "MEMORY_INSTANCE_PATH": folder,
                       "MEMORY_API_RATE_LIMIT": "100000000/minute", "HF_HUB_OFFLINE": "1"}
                results["profile"] = profile(env, key, f"reader-{max(sizes)}", qs, args.profile, MemoryClient)
            for client in clients[1:]:  # mem0's client has no close(): its httpx client is closed
                client.close()
            clients[0].client.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    write_results("mem0_compat", results, args.out)


def _line(part: dict[str, Any]) -> str:
    shown = ", ".join(f"{n} {part[n]['p50_ms']}/{part[n]['p95_ms']}" for n in ("mem0", "ours", "mem0_route", "our_route"))
    return f"p50/p95 ms {shown}; mem0 - ours {part['mem0_minus_ours_median_ms']} ms"


if __name__ == "__main__":
    main()
