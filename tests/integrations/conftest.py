"""mem0's integrations, each its own published package pinned in its own environment, pointed at
this server (issue 39). A test serves two worlds at once, one on SQLite and one on PostgreSQL, each
with the fake embedder, the fake model on loopback for what is added with inference and a worker
learning it, and runs the integration's flow once in a subprocess of its environment
(tests/integrations/flows/*.py, npm/*.mjs): one import of the integration for both stores. A flow
prints one JSON line, what it saw per store, which the test compares with what a team using that
integration needs to see.

The environments come from scripts/integrations.sh (`make test` runs it): a missing or stale one
fails the test, naming the command; it never skips. Nothing a flow runs may leave the machine:
every address but loopback goes to a proxy that is not there, and each integration's telemetry is
off by its own setting."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.queue import Worker
from portal.domain.types import Place

from ..api.conftest import World, make_world, serving, sqlite_engine  # noqa: F401 - fixtures shared with tests/api
from ..fakes.embedders import HashEmbedder
from ..fakes.llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ENVS = ROOT / ".integrations"
NPM = HERE / "npm"
SETUP = "scripts/integrations.sh (make test runs it)"
# Each integration's own switch for its telemetry ("false" in lower case: npm mem0ai reads no other), and
# mem0's home folder kept in the test's.
QUIET = {
    "MEM0_TELEMETRY": "false", "HAYSTACK_TELEMETRY_ENABLED": "False", "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_TRACING_ENABLED": "false", "OTEL_SDK_DISABLED": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "ANONYMIZED_TELEMETRY": "False", "AGNO_TELEMETRY": "false", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false", "PYTHONDONTWRITEBYTECODE": "1",
}
LINE = re.compile(r"^\[(\d+)\] user: (.*)$", flags=re.M)


def person_side(body: dict[str, Any]) -> str:
    """The fake model's answer: each message of the person is one fact, as written (mem0 keeps the
    person's side of a conversation)."""
    shown = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")
    facts = [{"text": text.strip(), "kind": "fact", "importance": 4, "messages": [int(index)]}
             for index, text in LINE.findall(shown) if text.strip()]
    return json.dumps({"facts": facts, "summary": "a chat"})


@dataclass
class Store:
    world: World
    url: str

    @property
    def key(self) -> str:
        return self.world.keys["a"]

    def texts(self, owner: str) -> list[str]:
        """What the person has kept, read through the service (not the API under test), sorted."""
        return sorted(m.text for m in self.world.runtime.service.list(Place(owner, self.world.tenant_a)).items)


@pytest.fixture(scope="module")
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        fake.answer = person_side
        yield fake


@pytest.fixture
def stores(request: pytest.FixtureRequest, make_world: Callable[..., World],  # noqa: F811
           model: FakeLLMServer) -> Iterator[dict[str, Store]]:
    """The two worlds, served, each with a worker learning what is added with inference."""
    with ExitStack() as stack:
        served: dict[str, Store] = {}
        for name, engine in (("sqlite", "sqlite_engine"), ("postgres", "pg_engine")):
            world = make_world(request.getfixturevalue(engine), embedder=HashEmbedder(),
                               llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0))
            world.runtime.service.ctx.options = replace(world.runtime.service.options, job_retry_seconds=0.2)
            worker = Worker(world.runtime.queue, workers=1).start()
            stack.callback(worker.stop)
            served[name] = Store(world, stack.enter_context(serving(world)))
        yield served


def _checksum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def python_of(env: str) -> Path:
    """The interpreter of a pinned environment; the test fails (never skips) when it is missing or
    older than its lock file."""
    lock = HERE / "envs" / f"{env}.lock"
    stamp = ENVS / env / ".stamp"
    if not stamp.is_file() or stamp.read_text().strip() != _checksum(lock):
        pytest.fail(f"the environment {env} of tests/integrations is missing or older than {lock.name}: run {SETUP}")
    return ENVS / env / "bin" / "python"


def node_ready() -> None:
    stamp = NPM / "node_modules" / ".stamp"
    if not stamp.is_file() or stamp.read_text().strip() != _checksum(NPM / "package-lock.json"):
        pytest.fail(f"the JavaScript integrations of tests/integrations are not installed: run {SETUP}")


def run_flow(flow: str, stores: dict[str, Store], tmp_path: Path, env: str | None = None,
             extra: dict[str, str] | None = None) -> dict[str, Any]:
    """Runs one flow (flows/<flow>.py in the environment `env`, or npm/<flow>.mjs with node) against
    every store; what it saw, per store."""
    if env is None:
        node_ready()
        command = ["node", "--import=./loopback-only.mjs", f"{flow}.mjs"]
        cwd = NPM
    else:
        command = [str(python_of(env)), str(HERE / "flows" / f"{flow}.py")]
        cwd = tmp_path
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    variables = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
        "MEM0_DIR": str(home / ".mem0"), **QUIET,
        "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost",
        "FLOW_STORES": json.dumps({name: {"url": s.url, "key": s.key} for name, s in stores.items()}),
        **(extra or {}),
    }
    done = subprocess.run(command, cwd=cwd, env=variables, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "blocked:" not in done.stderr, done.stderr[-4000:]  # an address off this machine (npm/loopback-only.mjs)
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr[-4000:]
    seen: dict[str, Any] = json.loads(lines[-1])
    return seen
