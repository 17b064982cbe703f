"""axe-core in the test browser: every page state of the browser suites is checked for
accessibility violations (WCAG 2.x A and AA rules and axe's best practices).

axe-core comes from the npm registry, pinned in tests/e2e/axe/package.json and installed by
`make test` (`npm ci`); it is injected into the page, which the portal's Content Security Policy
forbids, so only the test browser's contexts made for this check bypass the CSP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

AXE = Path(__file__).resolve().parent / "e2e" / "axe" / "node_modules" / "axe-core" / "axe.min.js"


def violations(page: Any, state: str) -> list[str]:
    """axe's violations on the page as it is now: "state: rule (targets)" for each."""
    if not AXE.is_file():
        pytest.fail(f"axe-core is missing ({AXE}): run `npm ci --prefix tests/e2e/axe` (make test does)")
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ['violations']});
        return result.violations.map(v => v.id + ' (' + v.nodes.map(n => n.target.join(' ')).join(', ') + ')');
    }""")
    return [f"{state}: {v}" for v in found]
