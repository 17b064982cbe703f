"""scripts/architecture.py (issue 15) counts what it claims to: it is run on a tiny package written to a
tmp folder, whose long files, long functions, function-local imports and import cycles are known."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "architecture.py"

MODULES = {
    "__init__.py": "",
    # a -> b at module level; `from package import name` where name is a submodule
    "a.py": "from portal import b\n\nif TYPE_CHECKING:\n    from . import c\n\n\n"
    + "def long_one():\n"
    + "    x = 1\n" * 60  # 61 lines: over 60
    + "\n\nclass K:\n    def fits(self):\n"
    + "        x = 1\n" * 59,  # 60 lines: not over
    # b -> a only inside functions: one explained, one not; TYPE_CHECKING and non-portal ones do not count
    "b.py": "import json\n\n\ndef f():\n    # lazy: a imports b at module level\n    from . import a\n\n\n"
    "def g():\n    import portal.a\n    import os\n\n\n"
    "def h():\n    if TYPE_CHECKING:\n        from .a import long_one\n",
    # c <-> d at module level, through `from .d import name` and `import portal.c`
    "c.py": "from .d import thing\n",
    "d.py": "import portal.c\n\nthing = 1\n",
    "big.py": "x = 1\n" * 301,
    "edge.py": "x = 1\n" * 300,
}


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), *args], capture_output=True, text=True, check=False)


def _report(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "portal").mkdir()
    for name, text in MODULES.items():
        (tmp_path / "portal" / name).write_text(text, encoding="utf-8")
    result = _run(tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_long_files_and_functions(tmp_path: Path) -> None:
    report = _report(tmp_path)
    assert report["long_files"] == {"count": 1, "items": [{"path": "portal/big.py", "lines": 301}]}
    assert report["long_functions"]["count"] == 1
    assert report["long_functions"]["items"] == [{"name": "portal.a.long_one", "path": "portal/a.py", "line": 7, "length": 61}]


def test_function_local_imports(tmp_path: Path) -> None:
    local = _report(tmp_path)["local_imports"]
    assert (local["count"], local["explained"], local["unexplained"]) == (2, 1, 1)
    found = [(item["path"], item["line"], item["targets"], item["explained"]) for item in local["items"]]
    assert found == [("portal/b.py", 6, ["portal.a"], True), ("portal/b.py", 10, ["portal.a"], False)]


def test_cycles_with_and_without_function_local_imports(tmp_path: Path) -> None:
    report = _report(tmp_path)
    assert report["cycles_module_level"] == {"count": 1, "components": [["portal.c", "portal.d"]]}
    with_local = report["cycles_with_local_imports"]
    assert with_local["count"] == 2
    assert with_local["components"] == [["portal.a", "portal.b"], ["portal.c", "portal.d"]]
    assert with_local["hidden_by_local_imports"] == [["portal.a", "portal.b"]]


def test_text_report_exits_zero(tmp_path: Path) -> None:
    _report(tmp_path)
    result = _run(tmp_path, "--max-file-lines", "299")
    assert result.returncode == 0, result.stderr
    assert "Files over 299 lines: 2" in result.stdout
    assert "Import cycles, module-level imports: 1" in result.stdout
