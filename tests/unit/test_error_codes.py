"""Every code the JSON API and the MCP server can answer has words (DESIGN §3, §11): its own text
in the refusal catalog, in English and French, which the MCP server sends as the error's message
and the API as the problem's `detail` when the code's site gives none (a `detail` is never null).

The codes are found by reading the source (calls that raise or answer a code, error classes,
result dictionaries), so a code added tomorrow without a text fails here. A site whose code the
scan cannot read (a variable) must be listed in DYNAMIC with the codes it can take, or with None
when it only passes on a code raised elsewhere (which the scan finds there).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from portal.api.problems import HTTP_CODES, REFUSAL_STATUS, problem, service_problem
from portal.domain.catalog import CATALOGS, OUTCOME_CODES, message
from portal.domain.errors import Refused
from portal.mcp.server import refused

ROOT = Path(__file__).resolve().parents[2] / "portal"
SCANNED = [*sorted((ROOT / "api").glob("*.py")), *sorted((ROOT / "mcp").glob("*.py")), ROOT / "cli" / "mcp.py",
           *sorted((ROOT / "services").glob("*.py")), *sorted((ROOT / "domain").rglob("*.py")), ROOT / "inputs.py",
           ROOT / "adapters" / "sql" / "accounts.py"]
# The callables that take a code, and which positional argument it is.
CODE_ARGUMENT = {"Refused": 0, "InvalidArgument": 0, "BadJson": 0, "AccountError": 0, "refused": 0, "_refusal": 0,
                 "_refused": 0, "ApiProblem": 1, "problem": 1, "answer": 1, "_refuse": 1}
# Sites whose code is a variable, by (file, enclosing function, callee): the codes each can take,
# or None where it passes on a code raised (and scanned) elsewhere.
DYNAMIC: dict[tuple[str, str, str], tuple[str, ...] | None] = {
    ("api/problems.py", "http_problem", "problem"): (*HTTP_CODES.values(), "error"),
    ("api/problems.py", "_api_problem", "problem"): None,
    ("api/problems.py", "_service", "problem"): None,
    ("api/problems.py", "_reused", "problem"): None,
    ("api/problems.py", "_running", "problem"): None,
    ("api/registry.py", "parse_json", "ApiProblem"): None,  # BadJson's codes
    ("api/registry.py", "check_path", "ApiProblem"): ("invalid_owner", "invalid_id"),
    ("mcp/server.py", "portrait", "refused"): None,
    ("mcp/server.py", "run", "refused"): None,
    ("mcp/server.py", "call_tool", "_refusal"): None,  # the service's codes (a bad conversation_ref's), raised and scanned there
    ("mcp/openmemory.py", "call_tool", "_refused"): None,  # the service's codes, raised and scanned there
    ("services/tools.py", "run_tool", "_refusal"): None,
    ("services/tools.py", "_refused", "_refusal"): None,
    ("services/consolidation.py", "_attempt", "_refuse"): None,
    ("services/administration.py", "create_staff", "Refused"): None,  # AccountError's codes
    ("services/administration.py", "set_account_password", "Refused"): None,
    # A content rule's own code (configuration): the generic text is its text (catalog.message).
    ("services/drafts.py", "draft", "Refused"): None,
    # checked_attributes' and expiry_of's codes, one per text
    ("services/memories.py", "remember_many", "Refused"): None,
}
NOT_CODES = {"refused", *OUTCOME_CODES}  # a tool result's "code" when it went well, or the refusal marker


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _constants(node: ast.expr | None) -> list[str] | None:
    """The strings an expression can be, or None when it is not a constant (or a choice of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        body, orelse = _constants(node.body), _constants(node.orelse)
        return None if body is None or orelse is None else body + orelse
    return None


class Scan(ast.NodeVisitor):
    """Every code written in one source file, and the sites whose code is a variable, each named by
    its innermost enclosing function."""

    def __init__(self, where: str) -> None:
        self.where, self.function = where, "<module>"
        self.codes: set[str] = set()
        self.dynamic: set[tuple[str, str, str]] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self.function = self.function, node.name
        self.generic_visit(node)
        self.function = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        index = CODE_ARGUMENT.get(_callee(node))
        if index is not None and len(node.args) > index:
            found = _constants(node.args[index])
            if found is None:
                self.dynamic.add((self.where, self.function, _callee(node)))
            else:
                self.codes.update(found)
        # code="..." (a Problem, an MCP error's data)
        self.codes.update(c for k in node.keywords if k.arg == "code" for c in _constants(k.value) or ())
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:  # {"code": ...} or {"reason": ...}
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and key.value in ("code", "reason"):
                self.codes.update(c for c in _constants(value) or () if c not in NOT_CODES)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:  # an error class's `code = "..."`
        for item in node.body:
            if isinstance(item, ast.Assign) and [getattr(t, "id", None) for t in item.targets] == ["code"]:
                self.codes.update(_constants(item.value) or ())
        self.generic_visit(node)


def scan() -> tuple[set[str], set[tuple[str, str, str]]]:
    codes: set[str] = set()
    dynamic: set[tuple[str, str, str]] = set()
    for path in SCANNED:
        found = Scan(str(path.relative_to(ROOT)))
        found.visit(ast.parse(path.read_text(encoding="utf-8")))
        codes |= found.codes
        dynamic |= found.dynamic
    return codes, dynamic


CODES, DYNAMIC_FOUND = scan()
ALL_CODES = sorted(CODES | set(REFUSAL_STATUS) | {c for taken in DYNAMIC.values() if taken for c in taken})


def test_the_scan_finds_the_codes_it_must() -> None:
    """The scan itself can fail: it must see codes of each kind of site."""
    assert {"unauthorized", "forbidden", "paused", "app_blocked", "invalid_owner", "rate_limited", "malformed_json",
            "json_too_deep", "idempotency_key_reused", "not_found", "invalid_arguments", "unknown_tool", "error",
            "invalid_where", "conflict", "invalid_if_match", "method_not_allowed"} <= set(ALL_CODES)


def test_every_site_whose_code_is_a_variable_is_known() -> None:
    unknown = DYNAMIC_FOUND - set(DYNAMIC)
    assert unknown == set(), "list each in DYNAMIC with the codes it can take (None: it passes one on)"
    assert set(DYNAMIC) - DYNAMIC_FOUND == set(), "DYNAMIC names a site that is gone"


@pytest.mark.parametrize("language", ["en", "fr"])
def test_every_code_has_its_own_text(language: str) -> None:
    generic = CATALOGS[language]["refused"]
    missing = [code for code in ALL_CODES if CATALOGS[language].get(f"refused.{code}") in (None, generic)]
    assert missing == [], f"codes the API or the MCP server can answer without words in {language}"


@pytest.mark.parametrize("code", ALL_CODES)
def test_the_api_answers_every_code_with_a_detail(code: str) -> None:
    assert problem(400, code).get_json()["detail"] == message(f"refused.{code}", "en")
    _status, body = service_problem(Refused(code))
    assert body.detail and body.detail == message(f"refused.{code}", "en") or code in REFUSAL_STATUS
    assert problem(422, code, "what the site says").get_json()["detail"] == "what the site says"


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("code", ALL_CODES)
def test_the_mcp_server_answers_every_code_with_its_text(code: str, language: str) -> None:
    error = refused(code, language, "a sentence for developers")
    assert error.error.message == message(f"refused.{code}", language) != CATALOGS[language]["refused"]
    assert error.error.data == {"code": code}
