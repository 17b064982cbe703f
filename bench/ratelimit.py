"""Rate limits across processes (issue 19): several `memory-portal serve` processes on one database
allow an API key its configured limit once when they count in one Redis, or in the app's own
database; with per-process memory counters (`memory://`) every worker allows it again.

One throwaway SQLite database (migrated, one tenant, one read key, through the command line as an
operator would), one throwaway `redis-server` on loopback with no persistence, then for each storage
two fresh `serve` processes of two gunicorn workers each, on free loopback ports, with the same
database and the same `RATELIMIT_STORAGE_URI`. A few client threads send far more requests than
the limit, alternately to each process, each on a new connection (a sync worker closes it after
every answer, so the processes' workers share the requests); 200s and 429s are counted per process.

Every process started here (redis-server, the gunicorn masters and their workers) is stopped on
the way out, also after a failure; the run checks that none of them is left.
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
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx

from bench.common import EXE, free_port, load_average, machine, served, stop, write_results

WINDOWS = {"second": 1, "minute": 60, "hour": 3600}
# What each storage setting puts in RATELIMIT_STORAGE_URI ("{redis}" is the throwaway server's URI).
STORAGES = {
    "redis": "{redis}",
    "database": "",  # empty: the app's own database (a counters file beside the SQLite database)
    "memory": "memory://",  # each worker process counts on its own: the failure mode
}


@contextmanager
def redis_server(folder: Path) -> Iterator[tuple[str, str]]:
    """A throwaway `redis-server` on a free loopback port, keeping nothing on disk; answers its URI
    and version."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise SystemExit("redis-server is not installed (Debian: apt-get install redis-server)")
    port = free_port()
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    with open(folder / "redis.log", "w") as log:
        proc = subprocess.Popen(
            [exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
             "--dir", str(folder)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        import redis

        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
        deadline = time.monotonic() + 20
        while True:
            try:
                if client.ping():
                    break
            except redis.RedisError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start; see {folder / 'redis.log'}")
            time.sleep(0.1)
        client.close()
        yield f"redis://127.0.0.1:{port}/0", version
    finally:
        stop(proc, grace=10)


def prepare(env: dict[str, str]) -> str:
    """Migrate the database and make a tenant and a read key, as an operator would; answers the key."""
    subprocess.run([EXE, "db", "upgrade"], env=env, check=True, capture_output=True)
    subprocess.run([EXE, "tenant", "create", "bench"], env=env, check=True, capture_output=True)
    return subprocess.run(
        [EXE, "api-key", "create", "--tenant", "bench", "--permission", "memories:read", "--name", "ratelimit"],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()


def hammer(bases: list[str], key: str, requests: int, clients: int) -> dict[str, Any]:
    """`requests` GETs of one key's list call, request i to process i mod len(bases), by `clients`
    threads; answers the status counts, per process and in all, and the wall time. Status codes,
    not X-RateLimit-Remaining: that header is read after the count and is not exact under load."""
    headers = {"Authorization": f"Bearer {key}"}
    lock = threading.Lock()
    counts: list[Counter[int]] = [Counter() for _ in bases]
    retry_after_missing = 0
    taken = iter(range(requests))

    def client() -> None:
        nonlocal retry_after_missing
        with httpx.Client(timeout=30) as http:
            while True:
                with lock:
                    i = next(taken, None)
                if i is None:
                    return
                which = i % len(bases)
                r = http.get(f"{bases[which]}/api/v1/people/bench-person/memories", headers=headers)
                with lock:
                    counts[which][r.status_code] += 1
                    if r.status_code == 429 and not r.headers.get("Retry-After"):
                        retry_after_missing += 1

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(client) for _ in range(clients)]:
            future.result()
    seconds = time.perf_counter() - started
    total: Counter[int] = sum(counts, Counter())
    unexpected = {code: n for code, n in total.items() if code not in (200, 429)}
    if unexpected:
        raise RuntimeError(f"answers other than 200 and 429: {unexpected}")
    return {
        "allowed": total[200], "refused": total[429], "seconds": round(seconds, 2),
        "per_process": [{"allowed": c[200], "refused": c[429]} for c in counts],
        "refusals_without_retry_after": retry_after_missing,
    }


def measure(args: argparse.Namespace, storage: str, uri: str, env: dict[str, str], key: str,
            folder: Path) -> dict[str, Any]:
    env = {**env, "RATELIMIT_STORAGE_URI": uri}
    load = load_average()
    with ExitStack() as stack:
        started = [stack.enter_context(served(env, args.workers, folder / f"serve-{storage}-{n}.log"))
                   for n in range(args.processes)]
        result = hammer([base for base, _ in started], key, args.requests, args.clients)
    # Leaving the stack stopped every process (SIGTERM, gunicorn's graceful exit); 0 is a clean one.
    result["exit_statuses"] = [proc.returncode for _, proc in started]
    limit = args.limit
    result.update({
        "storage_uri": uri or "(empty: the app's database)", "load_average_before": load,
        "allowed_per_limit": round(result["allowed"] / limit, 2),
        # The worst a storage of per-process counters could do: every worker allows the limit.
        "most_without_sharing": min(args.requests, limit * args.processes * args.workers),
        "within_one_window": result["seconds"] < WINDOWS[args.window],
    })
    print(f"{storage}: {result['allowed']} allowed, {result['refused']} refused of {args.requests} "
          f"(limit {limit}/{args.window}, {args.processes} processes x {args.workers} workers) "
          f"in {result['seconds']} s", file=sys.stderr)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ratelimit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=100, help="requests a key may make in a window")
    parser.add_argument("--window", choices=tuple(WINDOWS), default="minute")
    parser.add_argument("--requests", type=int, default=1200, help="requests sent per storage, shared by the processes")
    parser.add_argument("--processes", type=int, default=2, help="`memory-portal serve` processes")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers per process")
    parser.add_argument("--clients", type=int, default=8, help="client threads sending the requests")
    parser.add_argument("--storages", default=",".join(STORAGES), help="which of redis,database,memory")
    parser.add_argument("--quick", action="store_true", help="small counts, to check the script runs")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    storages = [s for s in args.storages.split(",") if s]
    if unknown := set(storages) - set(STORAGES):
        parser.error(f"unknown storages: {sorted(unknown)}")
    if args.quick:
        args.limit, args.requests = 20, 240
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    settings["rate_limit"] = f"{args.limit}/{args.window}"
    results: dict[str, Any] = {"machine": machine(), "settings": settings}
    for name in ("flask-limiter", "limits", "redis"):
        results["machine"]["versions"][name] = metadata.version(name)

    folder = Path(tempfile.mkdtemp(prefix="bench-ratelimit-"))
    env = {
        **os.environ,
        "MEMORY_DATABASE_URL": f"sqlite:///{folder}/memory.db", "MEMORY_EMBEDDER": "none",
        "MEMORY_SECRET_KEY": "bench-secret-key-not-for-production", "MEMORY_INSTANCE_PATH": str(folder),
        "MEMORY_API_RATE_LIMIT": settings["rate_limit"],
    }
    env.pop("RATELIMIT_STORAGE_URI", None)
    try:
        key = prepare(env)
        with redis_server(folder) as (redis_uri, redis_version):
            results["machine"]["versions"]["redis-server"] = redis_version
            # One key, one database: each storage counts from zero, since none sees another's counts.
            results["storages"] = {
                storage: measure(args, storage, STORAGES[storage].format(redis=redis_uri), env, key, folder)
                for storage in storages
            }
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    write_results("ratelimit", results, args.out)


if __name__ == "__main__":
    main()
