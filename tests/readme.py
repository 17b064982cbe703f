"""The README's code blocks, as the tests that run them as printed read them, and what a reader
has running when they paste one: `make run` up (`make_run`), a fresh shell (`fresh_shell_env`)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent / "memory-portal"
MAKE_RUN_PORT = re.search(r"^PORT \?= (\d+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), flags=re.M)[1]  # type: ignore[index]


def readme_block(section: str, language: str, containing: str = "") -> str:
    """The first ```<language> block (holding `containing`) of the section under the heading
    `## <section>`."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    blocks = re.findall(rf"```{language}\n(.*?)```", text[start:end if end > 0 else None], flags=re.S)
    found = [block for block in blocks if containing in block]
    assert found, f"the section {section!r} has no {language} block holding {containing!r}"
    return str(found[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fresh_shell_env(home: Path, instance: Path) -> dict[str, str]:
    """What a new terminal in the clone has: no virtual environment on its PATH, no MEMORY_ setting
    but the instance folder standing for the clone's `instance/` (and no embedding model, which a
    block's answers do not depend on). Nothing the tests run may reach mem0's analytics: every
    address but loopback goes to a proxy that is not there, and pip installs from no index."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
            "MEMORY_INSTANCE_PATH": str(instance), "MEMORY_EMBEDDER": "none",
            "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost",
            "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@contextmanager
def make_run(env: dict[str, str], port: int) -> Iterator[str]:
    """What `make run` leaves up in another terminal, on `port` and the instance of `env`: the schema,
    the demo, and `serve`. Yields its address; stops it after."""
    for args in (["db", "upgrade"], ["demo", "--url", f"http://127.0.0.1:{port}/"]):
        done = subprocess.run([str(BIN), *args], env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
    log = Path(env["MEMORY_INSTANCE_PATH"]) / "make-run.log"
    with log.open("w") as out:
        server = subprocess.Popen([str(BIN), "serve", "--port", str(port), "--workers", "1"], env=env,
                                  stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=40)


def shell(script: str, env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`script` in bash, as pasted into a terminal; whatever it left running is stopped after."""
    proc = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        try:
            os.killpg(proc.pid, 15)  # a server the block started, if its own `kill %1` missed it
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
