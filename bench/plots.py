"""The plots of docs/benchmarks.md, drawn from bench/results/*.json.

    python -m bench.plots            # writes docs/benchmarks/*.png

- recall-latency.png: recall p50 and p95 (query embedding excluded) against memories per person,
  for each in-process store (bench/results/latency.json);
- scale-flatness.png: recall p50 and p95 for one person against the database's total
  (bench/results/scale.json);
- peers.png: mem0 and ours side by side, search p50 with and without the query embedding and add
  throughput (bench/results/peers.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.common import RESULTS, ROOT

OUT = ROOT / "docs" / "benchmarks"
STORES = {"memory": "in-memory store", "sqlite": "SQLite file", "postgres": "PostgreSQL + pgvector"}


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def recall_latency(data: dict[str, Any], plt: Any) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for store, label in STORES.items():
        res = data["in_process"].get(store)
        if not res:
            continue
        sizes = sorted(int(s) for s in res["recall"])
        p50 = [res["recall"][str(s)]["p50_ms"] for s in sizes]
        p95 = [res["recall"][str(s)]["p95_ms"] for s in sizes]
        line = ax.plot(sizes, p95, marker="o", label=f"{label} p95")[0]
        ax.plot(sizes, p50, marker=".", linestyle="--", color=line.get_color(), label=f"{label} p50")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.text(110, 1.08, "1 ms target (1,000 per person)", fontsize=8, color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memories in the person's place")
    ax.set_ylabel("recall latency, ms (query embedding excluded)")
    ax.set_title("Recall in process, limit 5")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = OUT / "recall-latency.png"
    fig.savefig(path, dpi=120)
    return path


def scale_flatness(data: dict[str, Any], plt: Any) -> Path:
    steps = data["scale"]["steps"]
    totals = [s["total"] for s in steps]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for key, label in (("recall_first_person", "first person"), ("recall_newest_person", "newest person"),
                       ("recall_words_only_first_person", "first person, words only"),
                       ("recall_uncached_first_person", "first person, without the recall cache")):
        if key not in steps[0]:
            continue
        line = ax.plot(totals, [s[key]["p95_ms"] for s in steps], marker="o", label=f"{label} p95")[0]
        ax.plot(totals, [s[key]["p50_ms"] for s in steps], marker=".", linestyle="--", color=line.get_color(),
                label=f"{label} p50")
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("memories in the database (1,000 per person)")
    ax.set_ylabel("recall latency, ms (query embedding excluded)")
    ax.set_title("PostgreSQL + pgvector: one person's recall as the database grows")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = OUT / "scale-flatness.png"
    fig.savefig(path, dpi=120)
    return path


def peers(data: dict[str, Any], plt: Any) -> Path | None:
    parts = [(k, label) for k, label in (("one_person_1000", "1,000 memories"), ("scale_1m", "1,000,000 memories"))
             if k in data and "mem0" in data[k]]
    if not parts:
        return None
    fig, axes = plt.subplots(1, len(parts), figsize=(4.2 * len(parts), 4.2), squeeze=False)
    for ax, (key, label) in zip(axes[0], parts, strict=True):
        part = data[key]
        names = ["search p50", "search p95", "search p50\nno embedding", "search p95\nno embedding"]
        stats = [("search", "p50_ms"), ("search", "p95_ms"), ("search_without_embedding", "p50_ms"),
                 ("search_without_embedding", "p95_ms")]
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], [part["mem0"][a][b] for a, b in stats], width=0.4, label="mem0")
        ax.bar([x + 0.2 for x in xs], [part["ours"][a][b] for a, b in stats], width=0.4, label="memory portal")
        ax.set_xticks(list(xs), names, fontsize=7)
        ax.set_yscale("log")
        ax.set_ylim(bottom=1)
        ax.yaxis.set_major_formatter(plt.matplotlib.ticker.ScalarFormatter())
        ax.set_ylabel("ms (log scale)")
        ax.set_title(f"one person, {label} in the database", fontsize=9)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = OUT / "peers.png"
    fig.savefig(path, dpi=120)
    return path


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(prog="python -m bench.plots", description=__doc__.split("\n\n")[0]).parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    OUT.mkdir(parents=True, exist_ok=True)
    made = []
    if (latency := _load("latency")) and "in_process" in latency:
        made.append(recall_latency(latency, plt))
    if scale := _load("scale"):
        made.append(scale_flatness(scale, plt))
    if (peer := _load("peers")) and (path := peers(peer, plt)):
        made.append(path)
    for path in made:
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    main()
