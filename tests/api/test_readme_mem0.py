"""The README's "Switching from mem0" section with mem0's own clients against this server (issues 28
and 38), as a reader pastes it: its shell lines in a fresh shell in the clone while `make run` is up
in another terminal, then the Python block as a file run from that shell, and the TypeScript block
as an ES module; only the server's address is replaced (a free port for make run's). mem0's clients
read MEM0_TELEMETRY once, when they are imported, and otherwise send every call to mem0's analytics
(PostHog): as printed, the blocks tell mem0 nothing (the tests send nothing whatever the README
says: see tests/readme.py and tests/mem0_ts/telemetry-spy.mjs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from portal.domain.types import Place

from ..cli.runner import run
from ..readme import ROOT, free_port, fresh_shell_env, make_run, readme_block, shell
from .conftest import World, serving

pytest.importorskip("mem0", reason="mem0ai is in the test extra")

SECTION = "Switching from mem0"
SERVER = "http://127.0.0.1:8000"
NODE_CLIENT = ROOT / "tests" / "mem0_ts"  # `make test` runs npm ci there
# Appended to the Python block: what it found, and what mem0's own telemetry module made of it.
REPORT = """
import json as _json, sys as _sys
_telemetry = _sys.modules["mem0.memory.telemetry"]
print(_json.dumps({"telemetry": _telemetry.MEM0_TELEMETRY, "posthog": _telemetry.client_telemetry.posthog is not None,
                   "hits": [h["memory"] for h in hits["results"]], "count": page["count"]}))
"""


def setup_lines() -> str:
    setup = readme_block(SECTION, "sh")
    assert setup.startswith(". .venv/bin/activate") and "pip install mem0ai" in setup and "npm install mem0ai" in setup
    return setup


def kept(env: dict[str, str], owner: str = "ada") -> list[str]:
    exported = run(["export", owner, "--tenant", "Demo"], env)
    assert exported.returncode == 0, exported.stderr
    return [m["text"] for m in json.loads(exported.stdout)["memories"]]


def test_the_python_block_runs_as_pasted_after_its_shell_lines_and_tells_mem0_nothing(tmp_path: Path) -> None:
    setup, block = setup_lines(), readme_block(SECTION, "python")
    assert SERVER in block
    env = fresh_shell_env(tmp_path, tmp_path / "instance")
    with make_run(env, free_port()) as server:
        app = tmp_path / "app.py"
        app.write_text(block.replace(SERVER, server) + REPORT, encoding="utf-8")
        ran = shell(f"{setup}\npython {app}\n", env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    report = json.loads(ran.stdout.strip().splitlines()[-1])
    assert (report["telemetry"], report["posthog"]) == (False, False), "mem0 read MEM0_TELEMETRY before the block set it"
    assert (report["hits"], report["count"]) == (["I prefer short answers."], 1)
    assert kept(env) == []  # its last line, the person's erasure in this tenant


def test_the_typescript_block_runs_as_pasted_after_its_shell_lines_and_tells_mem0_nothing(tmp_path: Path) -> None:
    setup, block = setup_lines(), readme_block(SECTION, "js")
    assert SERVER in block
    if not (NODE_CLIENT / "node_modules" / "mem0ai").is_dir() or shutil.which("node") is None:
        pytest.fail("mem0's TypeScript client is not installed: run `npm ci --prefix tests/mem0_ts` (make test does)")
    env = {**fresh_shell_env(tmp_path, tmp_path / "instance"), "NODE_OPTIONS": "--import=./telemetry-spy.mjs"}
    module = NODE_CLIENT / ".readme-check.mjs"  # beside the client, as in the reader's project
    with make_run(env, free_port()) as server:
        module.write_text(f"{block.replace(SERVER, server)}\nconsole.log(JSON.stringify(hits));\n", encoding="utf-8")
        try:
            ran = shell(f"{setup}\ncd {NODE_CLIENT} && node {module.name}\n", env)
        finally:
            module.unlink()
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "telemetry:" not in ran.stderr, ran.stderr[-3000:]
    hits = json.loads(ran.stdout.strip().splitlines()[-1])
    assert [h["memory"] for h in hits["results"]] == ["I prefer short answers."]
    assert kept(env) == ["I prefer short answers."]


def test_what_the_python_block_keeps_is_what_it_says(world: World, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # In this process (mem0 imported already), to look at what the block's calls kept.
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))
    monkeypatch.setenv("MEM0_TELEMETRY", "false")  # the block sets it: put back after the test
    monkeypatch.setenv("MEMORY_API_KEY", world.keys["a"])  # what its shell lines export
    block = readme_block(SECTION, "python")
    ada = Place("ada", world.tenant_a)
    with serving(world) as url:
        # First without its last line, to see what the block kept and found; then as printed.
        namespace: dict[str, object] = {}
        before_erasure = block.replace('memory.delete_all(user_id="ada")', "pass")
        assert before_erasure != block
        exec(compile(before_erasure.replace(SERVER, url), "README.md", "exec"), namespace)  # noqa: S102
        [memory] = world.runtime.service.list(ada).items
        assert (memory.text, memory.attributes) == ("I prefer short answers.",
                                                   {"agent_id": "support-bot", "metadata": {"channel": "chat"}})
        assert [h["memory"] for h in namespace["hits"]["results"]] == [memory.text]  # type: ignore[index]
        assert namespace["page"]["count"] == 1  # type: ignore[index]
        exec(compile(block.replace(SERVER, url), "README.md", "exec"), {})  # noqa: S102
    assert world.count("ada") == 0


def test_the_suite_itself_tells_mem0_nothing() -> None:
    # mem0 was imported when the first test module naming it was collected (test_dated_recall.py,
    # before the modules that set MEM0_TELEMETRY): what it read then holds for the whole run.
    import mem0.memory.telemetry as telemetry  # why: mem0 is in the test extra, imported once collected

    assert telemetry.MEM0_TELEMETRY is False and telemetry.client_telemetry.posthog is None
