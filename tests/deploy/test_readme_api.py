"""The README's JSON API walk-through, run as printed in a fresh shell (issue 27): bash without the
virtual environment on its PATH, in the clone, while `make run` is up in another terminal (issue 38:
the block then met that server, on its port and its database). Only what cannot be the same on
every machine is replaced: the model's address (the fake OpenAI-compatible server on loopback
answers as a model would) and the ports (free ones). Every answer must come on its own line and be
what the README says it is."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..cli.runner import run
from ..fakes.llm_server import FakeLLMServer
from ..readme import MAKE_RUN_PORT, ROOT, free_port, fresh_shell_env, make_run, readme_block, shell

MODEL = "http://127.0.0.1:11434/v1"


def walk_through() -> str:
    return readme_block("The JSON API in five minutes", "sh")


def test_the_readme_api_walk_through_runs_as_printed_in_a_fresh_shell_beside_make_run(tmp_path: Path) -> None:
    script = walk_through()
    assert script.startswith(". .venv/bin/activate"), "a fresh shell has no memory-portal on its PATH"
    own = re.search(r"memory-portal serve --port (\d+)", script)
    assert own and MODEL in script
    assert own[1] != MAKE_RUN_PORT, "the block's server needs a port of its own: make run serves its port"
    assert '"conversation_ref"' in script, "an app names its conversation: the person's Recent conversations"
    port = free_port()
    env = {**fresh_shell_env(tmp_path, tmp_path / "instance"), "TMPDIR": str(tmp_path)}
    with make_run(env, free_port()) as other, FakeLLMServer() as model:
        model.script(json.dumps({"facts": [{"text": "Has a cat called Miso", "kind": "fact", "importance": 4}],
                                 "summary": "A new cat"}),
                     json.dumps({"facts": [{"text": "Is training for a marathon", "kind": "goal"}], "summary": "Running"}))
        # make run's port first: a block on that port meets make run's server, as a reader's does
        script = (script.replace(MODEL, model.base_url).replace(MAKE_RUN_PORT, other.rsplit(":", 1)[1])
                  .replace(own[1], str(port)))
        script = script.replace(">serve.log", f">{tmp_path / 'serve.log'}")  # not in the clone
        ran = shell(script, env)
    assert ran.returncode == 0, ran.stderr[-2000:]
    out = ran.stdout
    lines = [line for line in out.splitlines() if line.strip()]
    bodies = [json.loads(line) for line in lines if line.startswith("{")]
    remembered, recalled, portrait, learnt, background, erased = (
        bodies[0], bodies[1], bodies[2], bodies[3], bodies[4], bodies[5])
    assert remembered["memory"]["text"] == "Prefers short answers"
    assert recalled["items"][0]["memory"]["text"] == "Prefers short answers"
    assert "Prefers short answers" in portrait["text"]
    assert (learnt["status"], learnt["added"]) == ("done", 1), learnt  # its own server, with the model
    assert background["state"] == "queued" and any(line.startswith("HTTP/1.1 202") for line in lines)
    assert any(line.lower().startswith("location: /api/v1/people/ada/jobs/") for line in lines)
    assert "204" in lines
    assert erased["memories"] >= 1
    assert len(bodies) == 6, lines  # each body on its own line: none ran into the next
    # make run's database was left alone: the block kept its tenant in a database of its own
    tenants = run(["tenant", "list"], env).stdout
    assert "\tDemo\t" in tenants and "\tAcme\t" not in tenants
    assert not list(ROOT.glob("tmp.*")), "the block's database is made in the temporary folder"
