"""Measure the shape of the `portal` package -- issue 15: measure before and after.

Prints long files, long functions, function-local imports of portal modules (explained by a
"why:", "cycle" or "lazy" comment or not) and import cycles among portal modules, once from
module-level imports only and once with the function-local imports counted too, so the cycles
those imports hide can be seen. Stdlib only; it reports and does not judge (exit status 0).

    python scripts/architecture.py [--json] [--root DIR] [--max-file-lines 300] [--max-function-lines 60]
"""

from __future__ import annotations

import argparse
import ast
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

PACKAGE = "portal"
MARKERS = ("why:", "cycle", "lazy")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(nodes: Iterable[ast.AST], local: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement outside `if TYPE_CHECKING:` bodies, with whether it sits inside a function."""
    for node in nodes:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports(node.orelse, local)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield node, local
        else:
            yield from _imports(ast.iter_child_nodes(node), local or isinstance(node, FUNCTIONS))


def _functions(nodes: Iterable[ast.AST], prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method, nested ones included, with its qualified name."""
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
            yield from _functions(ast.iter_child_nodes(node), f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(ast.iter_child_nodes(node), f"{prefix}{node.name}.")
        else:
            yield from _functions(ast.iter_child_nodes(node), prefix)


class Module:
    def __init__(self, root: Path, path: Path) -> None:
        self.path = path.relative_to(root).as_posix()
        parts = list(path.relative_to(root).with_suffix("").parts)
        self.is_package = parts[-1] == "__init__"
        self.name = ".".join(parts[:-1] if self.is_package else parts)
        self.source = path.read_text(encoding="utf-8")
        self.lines = self.source.splitlines()
        self.tree = ast.parse(self.source, filename=self.path)


def _known(name: str, modules: dict[str, Module]) -> str | None:
    """The module itself, or its nearest ancestor that is a portal module."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in modules:
            return ".".join(parts)
        parts.pop()
    return None


def _targets(module: Module, node: ast.Import | ast.ImportFrom, modules: dict[str, Module]) -> tuple[str, list[str]]:
    """(the imported module as written, made absolute; the portal modules it loads) -- ("", []) if not portal."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names if alias.name.split(".")[0] == PACKAGE]
        found = {_known(name, modules) for name in names}
        return ", ".join(names), sorted(name for name in found if name)
    if node.level:
        package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    if base.split(".")[0] != PACKAGE:
        return "", []
    found = set()
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        found.add(submodule if submodule in modules else _known(base, modules))
    return base, sorted(name for name in found if name)


def _explained(module: Module, node: ast.stmt) -> bool:
    start, end = max(node.lineno - 2, 0), node.end_lineno or node.lineno
    comments = [line.split("#", 1)[1].lower() for line in module.lines[start:end] if "#" in line]
    return any(marker in comment for comment in comments for marker in MARKERS)


def _tarjan(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module, each sorted, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def measure(root: Path, max_file_lines: int, max_function_lines: int) -> dict[str, Any]:
    modules = {m.name: m for m in (Module(root, p) for p in sorted((root / PACKAGE).rglob("*.py")))}
    long_files: list[dict[str, Any]] = [
        {"path": m.path, "lines": len(m.lines)} for m in modules.values() if len(m.lines) > max_file_lines
    ]
    long_functions: list[dict[str, Any]] = []
    local_imports: list[dict[str, Any]] = []
    top_level: dict[str, set[str]] = {name: set() for name in modules}
    with_local: dict[str, set[str]] = {name: set() for name in modules}
    for m in modules.values():
        for qualname, fn in _functions(m.tree.body, f"{m.name}."):
            length = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if length > max_function_lines:
                long_functions.append({"name": qualname, "path": m.path, "line": fn.lineno, "length": length})
        for node, local in _imports(m.tree.body):
            written, targets = _targets(m, node, modules)
            if not written:
                continue
            targets = [t for t in targets if t != m.name]
            with_local[m.name].update(targets)
            if local:
                local_imports.append(
                    {"path": m.path, "line": node.lineno, "module": written, "targets": targets, "explained": _explained(m, node)}
                )
            else:
                top_level[m.name].update(targets)
    explained = sum(1 for item in local_imports if item["explained"])
    module_cycles, all_cycles = _tarjan(top_level), _tarjan(with_local)
    long_files.sort(key=lambda f: (-f["lines"], f["path"]))
    long_functions.sort(key=lambda f: (-f["length"], f["name"]))
    hidden = [c for c in all_cycles if c not in module_cycles]
    return {
        "long_files": {"count": len(long_files), "items": long_files},
        "long_functions": {"count": len(long_functions), "items": long_functions},
        "local_imports": {
            "count": len(local_imports),
            "explained": explained,
            "unexplained": len(local_imports) - explained,
            "items": local_imports,
        },
        "cycles_module_level": {"count": len(module_cycles), "components": module_cycles},
        "cycles_with_local_imports": {"count": len(all_cycles), "components": all_cycles, "hidden_by_local_imports": hidden},
    }


def _print(report: dict[str, Any], max_file_lines: int, max_function_lines: int) -> None:
    files, functions, local = report["long_files"], report["long_functions"], report["local_imports"]
    print(f"Files over {max_file_lines} lines: {files['count']}")
    for f in files["items"]:
        print(f"  {f['lines']:5}  {f['path']}")
    print(f"\nFunctions and methods over {max_function_lines} lines: {functions['count']}")
    for f in functions["items"]:
        print(f"  {f['length']:5}  {f['name']}  ({f['path']}:{f['line']})")
    print(
        f"\nFunction-local imports of portal modules: {local['count']}"
        f" (explained {local['explained']}, unexplained {local['unexplained']})"
    )
    for item in local["items"]:
        mark = "explained  " if item["explained"] else "UNEXPLAINED"
        print(f"  {mark}  {item['path']}:{item['line']}  {item['module']} -> {', '.join(item['targets']) or '?'}")
    titles = {"cycles_module_level": "module-level imports", "cycles_with_local_imports": "with function-local imports"}
    for key, title in titles.items():
        cycles = report[key]
        print(f"\nImport cycles, {title}: {cycles['count']}")
        for component in cycles["components"]:
            hidden = " (hidden by function-local imports)" if component in cycles.get("hidden_by_local_imports", ()) else ""
            print(f"  [{len(component)}]{hidden} {', '.join(component)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print everything as one JSON object")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="folder holding portal/")
    parser.add_argument("--max-file-lines", type=int, default=300)
    parser.add_argument("--max-function-lines", type=int, default=60)
    args = parser.parse_args(argv)
    report = measure(args.root.resolve(), args.max_file_lines, args.max_function_lines)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report, args.max_file_lines, args.max_function_lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
