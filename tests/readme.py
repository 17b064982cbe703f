"""The README's code blocks, as the tests that run them as printed read them."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_block(section: str, language: str) -> str:
    """The first ```<language> block after the heading `## <section>`."""
    text = README.read_text(encoding="utf-8")
    found = re.search(rf"```{language}\n(.*?)```", text[text.index(f"## {section}"):], flags=re.S)
    assert found, f"the section {section!r} has no {language} block"
    return found.group(1)
