"""Runs inside mem0's own virtual environment (made by bench/peers.py); imports nothing of ours.

    /tmp/mem0-venv/bin/python bench/mem0_driver.py < job.json > result.json

The job (JSON on stdin) names the database, the model folder, the texts to add, the queries, and
optionally a scale to load. It answers JSON on stdout: add and search timings in milliseconds,
the query embedding measured apart, and what the searches found. Logs go to stderr.

mem0 is configured as its documentation says for this setup: `Memory.from_config` with the
`huggingface` embedder (a local sentence-transformers folder) and the `pgvector` vector store,
`add(..., infer=False)` (no LLM: each message is stored as it is) and `search(query,
filters={"user_id": ...}, top_k=...)`.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MEM0_TELEMETRY", "False")
# mem0 builds its default LLM client at start-up even when infer=False never calls it.
os.environ.setdefault("OPENAI_API_KEY", "unused-no-llm-is-called")


def log(*args: object) -> None:
    print(*args, file=sys.stderr, flush=True)


def pct(samples: list[float]) -> dict[str, float]:
    import numpy as np

    a = np.asarray(samples, dtype=np.float64)
    return {
        "n": int(a.size), "mean_ms": round(float(a.mean()), 4), "p50_ms": round(float(np.percentile(a, 50)), 4),
        "p95_ms": round(float(np.percentile(a, 95)), 4), "p99_ms": round(float(np.percentile(a, 99)), 4),
        "max_ms": round(float(a.max()), 4),
    }


def make_memory(job: dict) -> object:
    from mem0 import Memory

    os.makedirs(job["home"], exist_ok=True)
    config = {
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "connection_string": job["conninfo"],
                "collection_name": job["collection"],
                "embedding_model_dims": 384,
                "hnsw": bool(job.get("hnsw", False)),
            },
        },
        "embedder": {"provider": "huggingface", "config": {"model": job["model_path"]}},
        "history_db_path": os.path.join(job["home"], "history.db"),
    }
    return Memory.from_config(config)


def load_scale(job: dict, memory: object) -> dict:
    """Other people's memories straight into mem0's table with COPY (as mem0 itself would have
    stored them: id, vector, payload with user_id, data, hash, dates), so that the measured
    person's searches run against `total` rows."""
    import hashlib
    from datetime import UTC, datetime

    import numpy as np
    import psycopg

    store = memory.vector_store  # type: ignore[attr-defined]
    store._ensure_collection()
    people, per_person, seed = job["scale_people"], job["scale_per_person"], job.get("seed", 0)
    rng = np.random.default_rng(seed)
    texts = job["filler_texts"]
    started = time.perf_counter()
    now = datetime.now(UTC).isoformat()
    with psycopg.connect(job["conninfo"]) as conn, conn.cursor() as cur:
        with cur.copy(f'COPY "{job["collection"]}" (id, vector, payload) FROM STDIN') as copy:
            batch = 10_000
            total = people * per_person
            for start in range(0, total, batch):
                n = min(batch, total - start)
                vecs = rng.standard_normal((n, 384), dtype=np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                owners = rng.integers(0, people, n)
                for k in range(n):
                    text = texts[(start + k) % len(texts)]
                    payload = {
                        "user_id": f"other-{owners[k]}", "data": text, "hash": hashlib.md5(text.encode()).hexdigest(),  # noqa: S324
                        "created_at": now, "updated_at": now, "role": "user", "text_lemmatized": text,
                    }
                    vec = "[" + ",".join(f"{x:.6f}" for x in vecs[k]) + "]"
                    copy.write_row((str(uuid.uuid4()), vec, json.dumps(payload)))
                log(f"mem0 scale: {start + n} rows")
        cur.execute(f'ANALYZE "{job["collection"]}"')
        conn.commit()
    return {"rows": people * per_person, "seconds": round(time.perf_counter() - started, 1)}


def explain(job: dict, vector: list, limit: int) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the vector query mem0's pgvector store sends for a search
    (its `search`: the person's filter on the JSON payload, ordered by `<=>`, over-fetching
    max(limit * 4, 60) candidates)."""
    import re

    import psycopg

    sql = (f'EXPLAIN (ANALYZE, BUFFERS) SELECT id, vector <=> %s::vector AS distance, payload FROM "{job["collection"]}" '
           "WHERE payload->>%s = %s ORDER BY distance LIMIT %s")
    with psycopg.connect(job["conninfo"]) as conn:
        rows = conn.execute(sql, (str(list(vector)), "user_id", job["user_id"], max(limit * 4, 60))).fetchall()
    plan = "\n".join(r[0] for r in rows)
    return re.sub(r"'\[[-0-9.e, +]+\]'::vector", "'[...384 numbers...]'::vector", plan)


def main() -> None:
    job = json.load(sys.stdin)
    from importlib import metadata

    import mem0

    out: dict = {"mem0_version": metadata.version("mem0ai"), "hnsw": bool(job.get("hnsw", False))}
    t0 = time.perf_counter()
    memory = make_memory(job)
    out["start_seconds"] = round(time.perf_counter() - t0, 2)
    user = job["user_id"]
    embedder = memory.embedding_model  # type: ignore[attr-defined]
    embedder.embed("warm up", "search")

    if job.get("drop_hnsw"):
        # mem0 made an HNSW index when the collection was created (its default); searches at scale
        # are measured exact, and COPY need not maintain the index.
        import psycopg

        with psycopg.connect(job["conninfo"], autocommit=True) as conn:
            conn.execute(f'DROP INDEX IF EXISTS "{job["collection"]}_hnsw_idx"')
        out["hnsw"] = False
    if job.get("scale_people"):
        out["scale_load"] = load_scale(job, memory)

    if job.get("texts"):
        # add: one message per call, infer=False (no LLM), the local model embedding each.
        adds = []
        started = time.perf_counter()
        for text in job["texts"]:
            a = time.perf_counter_ns()
            memory.add([{"role": "user", "content": text}], user_id=user, infer=False)  # type: ignore[attr-defined]
            adds.append((time.perf_counter_ns() - a) / 1e6)
        elapsed = time.perf_counter() - started
        out["add"] = {"count": len(adds), "seconds": round(elapsed, 3), "per_second": round(len(adds) / elapsed, 1),
                      "latency": pct(adds)}
        log(f"mem0 add: {out['add']['per_second']}/s")
        batch = job.get("batch", 0)
        if batch:
            # The same texts for another person, `batch` messages per add call (mem0 still embeds
            # and inserts them one at a time inside the call).
            started = time.perf_counter()
            texts = job["texts"]
            for i in range(0, len(texts), batch):
                chunk = [{"role": "user", "content": t} for t in texts[i : i + batch]]
                memory.add(chunk, user_id=user + "-batch", infer=False)  # type: ignore[attr-defined]
            elapsed = time.perf_counter() - started
            out["add_batch"] = {"count": len(texts), "batch": batch, "seconds": round(elapsed, 3),
                                "per_second": round(len(texts) / elapsed, 1)}

    queries = job["queries"]
    warm = job.get("warmup", 10)
    limit = job.get("limit", 5)

    def search(q: str) -> dict:
        return memory.search(q, filters={"user_id": user}, top_k=limit)  # type: ignore[attr-defined]

    for q in queries[:warm]:
        search(q)
    full, found = [], []
    for q in queries:
        a = time.perf_counter_ns()
        answer = search(q)
        full.append((time.perf_counter_ns() - a) / 1e6)
        found.append(len(answer.get("results", [])))
    out["search"] = pct(full)
    out["search_results_mean"] = round(sum(found) / len(found), 2)
    out["search_with_no_result"] = sum(1 for f in found if f == 0)

    # The query embedding alone, then search with it precomputed (mem0's own path otherwise).
    emb = []
    cache = {}
    for q in queries:
        a = time.perf_counter_ns()
        cache[q] = embedder.embed(q, "search")
        emb.append((time.perf_counter_ns() - a) / 1e6)
    out["query_embedding"] = pct(emb)
    real_embed = embedder.embed
    embedder.embed = lambda text, memory_action=None: cache[text] if text in cache else real_embed(text, memory_action)
    rest = []
    for q in queries:
        a = time.perf_counter_ns()
        search(q)
        rest.append((time.perf_counter_ns() - a) / 1e6)
    embedder.embed = real_embed
    out["search_without_embedding"] = pct(rest)
    log(f"mem0 search p50 {out['search']['p50_ms']} ms, without embedding {out['search_without_embedding']['p50_ms']} ms")
    if job.get("explain"):
        try:
            out["plan"] = explain(job, cache[queries[0]], limit)
        except Exception as exc:  # the plan is for the docs; the timings stand without it
            out["plan_error"] = f"{type(exc).__name__}: {exc}"
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    _ = mem0


if __name__ == "__main__":
    main()
