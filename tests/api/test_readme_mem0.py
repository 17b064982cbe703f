"""The README's "Switching from mem0" Python block, run as printed (issue 28) with mem0's own
client against this server on SQLite: only the key and the server's address are given, as a
reader would fill them in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from portal.domain.types import Place

from ..readme import readme_block
from .conftest import World, serving

pytest.importorskip("mem0", reason="mem0ai is in the test extra")



def test_the_readme_switching_block_runs_as_printed(world: World, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    block = readme_block("Switching from mem0", "python")
    assert 'host="http://127.0.0.1:8000"' in block
    ada = Place("ada", world.tenant_a)
    with serving(world) as url:
        # First without its last line, to see what the block kept and found; then as printed.
        namespace: dict[str, object] = {"KEY": world.keys["a"]}
        before_erasure = block.replace('memory.delete_all(user_id="ada")', "pass")
        assert before_erasure != block
        exec(compile(before_erasure.replace("http://127.0.0.1:8000", url), "README.md", "exec"), namespace)
        [memory] = world.runtime.service.list(ada).items
        assert (memory.text, memory.attributes) == ("I prefer short answers.",
                                                   {"agent_id": "support-bot", "metadata": {"channel": "chat"}})
        assert [h["memory"] for h in namespace["hits"]["results"]] == [memory.text]  # type: ignore[index]
        assert namespace["page"]["count"] == 1  # type: ignore[index]
        exec(compile(block.replace("http://127.0.0.1:8000", url), "README.md", "exec"), {"KEY": world.keys["a"]})
    assert world.count("ada") == 0


NODE_CLIENT = Path(__file__).resolve().parents[1] / "mem0_ts"  # `make test` runs npm ci there


def test_the_readme_typescript_lines_run_as_printed_with_mem0s_own_client(world: World, tmp_path: Path) -> None:
    block = readme_block("Switching from mem0", "js")
    if not (NODE_CLIENT / "node_modules" / "mem0ai").is_dir() or shutil.which("node") is None:
        pytest.fail("mem0's TypeScript client is not installed: run `npm ci --prefix tests/mem0_ts` (make test does)")
    with serving(world) as url:
        script = block.replace("http://127.0.0.1:8000", url)
        # The block as printed, then what it answered, as JSON on the last line.
        script = f"const KEY = {json.dumps(world.keys['a'])};\n{script}\nconsole.log(JSON.stringify(hits));\n"
        (NODE_CLIENT / ".readme-check.mjs").write_text(script, encoding="utf-8")
        try:
            ran = subprocess.run(["node", ".readme-check.mjs"], cwd=NODE_CLIENT, capture_output=True, text=True,
                                 timeout=60, env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
        finally:
            (NODE_CLIENT / ".readme-check.mjs").unlink()
    assert ran.returncode == 0, ran.stderr[-2000:]
    hits = json.loads(ran.stdout.strip().splitlines()[-1])
    assert [h["memory"] for h in hits["results"]] == ["I prefer short answers."]
    [memory] = world.runtime.service.list(Place("ada", world.tenant_a)).items
    assert memory.text == "I prefer short answers."
