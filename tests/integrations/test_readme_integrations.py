"""The README's "mem0's integrations" section is what the suite runs: every line of its Python and
JavaScript blocks (the line that points an integration here) is a line of one of the flows in
tests/integrations, and every version it tells to install is the one pinned in the lock files."""

from __future__ import annotations

import json
import re

from ..readme import README
from .conftest import HERE, NPM

SECTION = "mem0's integrations"


def section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {SECTION}\n")
    return text[start:text.find("\n## ", start + 1)]


def flow_lines() -> set[str]:
    files = [*(HERE / "flows").glob("flow_*.py"), *NPM.glob("flow_*.mjs")]
    return {line.strip() for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.strip()}


def test_every_line_that_points_an_integration_here_is_one_the_suite_runs() -> None:
    blocks = re.findall(r"```(?:python|js)\n(.*?)```", section(), flags=re.S)
    assert len(blocks) == 11
    lines = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    assert [line for line in lines if line not in flow_lines()] == []


def test_every_version_the_section_installs_is_the_pinned_one() -> None:
    pinned = {}
    for lock in (HERE / "envs").glob("*.lock"):
        for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", lock.read_text(encoding="utf-8"), flags=re.M):
            pinned.setdefault(name.lower(), set()).add(version)
    installed = json.loads((NPM / "package-lock.json").read_text(encoding="utf-8"))["packages"]
    for block in re.findall(r"```sh\n(.*?)```", section(), flags=re.S):
        for package, version in re.findall(r"\"?([a-z][\w-]*)(?:\[[\w,]+\])?==([\w.]+)", block):
            assert version in pinned.get(package.lower(), set()), (package, version)
        for package, version in re.findall(r"(@?[a-z][\w./-]*)@(\d[\w.]*)", block):
            locked = {p["version"] for path, p in installed.items() if path.endswith(f"node_modules/{package}")}
            if package == "@mem0/vercel-ai-provider":
                locked.add(installed["node_modules/mem0-vercel-ai-provider-2"]["version"])
            assert version in locked, (package, version)
