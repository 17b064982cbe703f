"""One benchmark, side by side on one machine: this tree against a git revision (issue 30).

    python -m bench.compare --base e986205 --base 345997f --rounds 3 --out bench/results/compare.json -- \\
        bench.latency --only http --http-stores sqlite

Runs the benchmark module given after `--` in a git worktree of each `--base` (made once under
/tmp, detached) and in this tree, one after the other, each going first in turn, each with its
own code (PYTHONPATH and working folder: the revision's own script, server and migrations). The
module must take `--out FILE` and write JSON there. Answers, for each number both runs wrote (by
its path in the JSON), the median over the rounds of each side and their ratio (this tree over
the base), with the load average before each run beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


def tree_of(revision: str) -> Path:
    """A git worktree of `revision` under /tmp (made once, detached), its node packages linked."""
    path = Path(tempfile.gettempdir()) / f"portal-{revision}"
    if not (path / "portal").is_dir():
        subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", str(path), revision], check=True,
                       capture_output=True)
    return path


def run(tree: Path, module: str, args: list[str]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = Path(handle.name)
    load = [round(x, 2) for x in os.getloadavg()]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-m", module, *args, "--out", str(out)], env=env, cwd=tree, check=True)
    try:
        return {"result": json.loads(out.read_text()), "load_before": load}
    finally:
        out.unlink(missing_ok=True)


def numbers(data: Any, path: str = "") -> dict[str, float]:
    """Every number of a JSON document, by its path ("http/sqlite/recall_8_clients/per_second")."""
    if isinstance(data, bool):
        return {}
    if isinstance(data, int | float):
        return {path: float(data)}
    found: dict[str, float] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            found.update(numbers(value, f"{path}/{key}" if path else str(key)))
    return found


def summary(base: list[dict[str, Any]], head: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    rows: dict[str, dict[str, float | None]] = {}
    base_numbers = [numbers(r["result"]) for r in base]
    head_numbers = [numbers(r["result"]) for r in head]
    for key in sorted(set.intersection(*(set(n) for n in base_numbers + head_numbers))):
        if "load_average" in key or "seconds" in key.rsplit("/", 1)[-1]:
            continue
        b = statistics.median(n[key] for n in base_numbers)
        h = statistics.median(n[key] for n in head_numbers)
        rows[key] = {"base": round(b, 3), "head": round(h, 3), "ratio": round(h / b, 3) if b else None}
    return rows


def main(argv: list[str] | None = None) -> None:
    given = sys.argv[1:] if argv is None else argv
    ours, bench = (given[: given.index("--")], given[given.index("--") + 1:]) if "--" in given else (given, [])
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, action="append", help="a git revision to compare with (repeatable)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(ours)
    if not bench:
        parser.error("name the benchmark module after --, e.g. -- bench.latency --only http")
    module, rest = bench[0], bench[1:]
    trees = [("head", HERE)] + [(revision, tree_of(revision)) for revision in args.base]
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side, _ in trees}
    for round_ in range(args.rounds):
        turn = round_ % len(trees)  # each tree goes first in turn
        for side, tree in trees[turn:] + trees[:turn]:
            print(f"round {round_ + 1}/{args.rounds}: {side} ({tree})", file=sys.stderr)
            runs[side].append(run(tree, module, rest))
    head_rev = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=False).stdout.strip()
    report = {"head": head_rev, "bases": args.base, "benchmark": bench, "rounds": args.rounds,
              "against": {revision: summary(runs[revision], runs["head"]) for revision in args.base}, "runs": runs}
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    for revision, rows in report["against"].items():
        print(f"head {head_rev} against {revision}: base, head, head/base")
        for key, row in rows.items():
            print(f"  {key:70} {row['base']:>10} {row['head']:>10}  x{row['ratio']}")


if __name__ == "__main__":
    main()
