"""The README's JSON API walk-through, run as printed in a fresh shell (issue 27): bash without the
virtual environment on its PATH, in the clone, against a new instance folder. Only what cannot be
the same on every machine is replaced: the model's address (the fake OpenAI-compatible server on
loopback answers as a model would) and the port (a free one). Every answer must come on its own
line and be what the README says it is."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path

from ..fakes.llm_server import FakeLLMServer
from ..readme import readme_block

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MODEL = "http://127.0.0.1:11434/v1"


def walk_through() -> str:
    return readme_block("The JSON API in five minutes", "sh")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_readme_api_walk_through_runs_as_printed_in_a_fresh_shell(tmp_path: Path) -> None:
    script = walk_through()
    assert script.startswith(". .venv/bin/activate"), "a fresh shell has no memory-portal on its PATH"
    assert MODEL in script and "--port 8000" in script
    port = free_port()
    with FakeLLMServer() as model:
        model.script(json.dumps({"facts": [{"text": "Has a cat called Miso", "kind": "fact", "importance": 4}],
                                 "summary": "A new cat"}),
                     json.dumps({"facts": [{"text": "Is training for a marathon", "kind": "goal"}], "summary": "Running"}))
        script = script.replace(MODEL, model.base_url).replace("8000", str(port))
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
               "MEMORY_INSTANCE_PATH": str(tmp_path / "instance"), "MEMORY_EMBEDDER": "none"}
        script = script.replace(">serve.log", f">{tmp_path / 'serve.log'}")  # not in the clone
        shell = subprocess.Popen(["bash", "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = shell.communicate(timeout=300)
        finally:
            try:
                os.killpg(shell.pid, signal.SIGTERM)  # the server the block started, if `kill %1` missed it
            except ProcessLookupError:
                pass
    assert shell.returncode == 0, err[-2000:]
    lines = [line for line in out.splitlines() if line.strip()]
    bodies = [json.loads(line) for line in lines if line.startswith("{")]
    remembered, recalled, portrait, learnt, background, erased = (
        bodies[0], bodies[1], bodies[2], bodies[3], bodies[4], bodies[5])
    assert remembered["memory"]["text"] == "Prefers short answers"
    assert recalled["items"][0]["memory"]["text"] == "Prefers short answers"
    assert "Prefers short answers" in portrait["text"]
    assert (learnt["status"], learnt["added"]) == ("done", 1)
    assert background["state"] == "queued" and any(line.startswith("HTTP/1.1 202") for line in lines)
    assert any(line.lower().startswith("location: /api/v1/people/ada/jobs/") for line in lines)
    assert "204" in lines
    assert erased["memories"] >= 1
    assert len(bodies) == 6, lines  # each body on its own line: none ran into the next
