"""mem0's npm client 2.4.6 (tests/mem0_ts, as `mem0ai-2`; what LangChain.js `Mem0Memory` and the
Vercel provider 2.x run on) against this server on SQLite and PostgreSQL (issue 39, items 4 and 7):
its v1 listing reads a JSON list (a page only when it asks for page and page_size, whose links
keep the person and the filters), its `api_version: "v2"` reads send the agent and run beside the
person, and `limit`, `infer` and an add's other options ride along on reads. Every request is the
client's own; the test only reads what it answered."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest

from ..readme import ROOT
from .conftest import World
from .test_mem0_fields import served  # noqa: F401 - the same two served worlds, plain

NODE_CLIENT = ROOT / "tests" / "mem0_ts"  # `make test` runs npm ci there

# Seeds ada's and bob's memories with the client's add, then reads them as LangChain.js and a
# v2 caller do; prints what each read answered.
SCRIPT = """
import { MemoryClient } from "mem0ai-2";
const [host, apiKey] = process.argv.slice(1);
const memory = new MemoryClient({ apiKey, host });
const add = (content, options) => memory.add([{ role: "user", content }], { infer: false, ...options });
await add("Wants a window seat", { user_id: "ada", agent_id: "travel-bot", run_id: "trip-7" });
await add("Wants an aisle seat", { user_id: "ada", agent_id: "travel-bot", run_id: "trip-8" });
await add("Likes green tea", { user_id: "ada" });
await add("Plays the cello", { user_id: "bob", agent_id: "travel-bot" });
const out = {};
out.list = await memory.getAll({ user_id: "ada" });
out.langchain = await memory.getAll({ user_id: "ada", infer: false, limit: 2 });
out.page = await memory.getAll({ user_id: "ada", agent_id: "travel-bot", page: 1, page_size: 1 });
const next = await fetch(out.page.next, { headers: { Authorization: `Token ${apiKey}` } });
out.next = { status: next.status, body: await next.json() };
out.v2list = await memory.getAll({ user_id: "ada", run_id: "trip-7", api_version: "v2" });
out.v2search = await memory.search("seat", { user_id: "ada", agent_id: "travel-bot", run_id: "trip-8", limit: 5,
                                              threshold: 0, api_version: "v2" });
out.v1search = await memory.search("green tea", { user_id: "ada", infer: false, top_k: 1 });
console.log(JSON.stringify(out));
"""


def run_client(url: str, key: str) -> Any:
    if not (NODE_CLIENT / "node_modules" / "mem0ai-2").is_dir() or shutil.which("node") is None:
        pytest.fail("mem0's npm client 2.4.6 is not installed: run `npm ci --prefix tests/mem0_ts` (make test does)")
    env = {**os.environ, "MEM0_TELEMETRY": "false", "NODE_OPTIONS": "--import=./telemetry-spy.mjs"}
    ran = subprocess.run(["node", "--input-type=module", "-e", SCRIPT, url, key], cwd=NODE_CLIENT, env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "telemetry:" not in ran.stderr, ran.stderr[-3000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


def texts(items: list[dict[str, Any]]) -> list[str]:
    return [m["memory"] for m in items]


def test_the_npm_2_client_reads_lists_pages_and_v2_reads_as_mem0_answers_them(served: tuple[World, str]) -> None:  # noqa: F811
    world, url = served
    out = run_client(url, world.keys["a"])
    # GET /v1/memories/ without page and page_size: mem0's v1 answer, a list (LangChain.js's history).
    assert isinstance(out["list"], list)
    assert texts(out["list"]) == ["Likes green tea", "Wants an aisle seat", "Wants a window seat"]
    assert texts(out["langchain"]) == ["Likes green tea", "Wants an aisle seat"]  # `limit`: a cap; `infer` no meaning
    # With both, a page; its link keeps the person and the agent (following it reads page 2 of the same).
    assert out["page"]["count"] == 2 and texts(out["page"]["results"]) == ["Wants an aisle seat"]
    assert out["next"]["status"] == 200 and texts(out["next"]["body"]["results"]) == ["Wants a window seat"]
    assert out["next"]["body"]["previous"] and out["next"]["body"]["next"] is None
    # v2 reads with the agent and run beside the person: narrowed by them, bob's never in.
    assert texts(out["v2list"]["results"]) == ["Wants a window seat"]
    assert texts(out["v2search"]) == ["Wants an aisle seat"]
    assert texts(out["v1search"]) == ["Likes green tea"]  # v1 search: a list, as mem0's v1.0 output
