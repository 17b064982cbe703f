"""What the support console's erasure reaches is said one way everywhere (issue 27, item 2): the
person's organisation (their tenant, owner ids being per tenant), or every organisation only where
the host set MEMORY_ERASURE_SCOPE=all. The README, docs/operations.md and the page say it, and the
page's sentence is checked against what the erasure does."""

from __future__ import annotations

import re
from pathlib import Path

from portal.domain.types import Place

from .conftest import Console, page_text
from .test_erasure import log

ROOT = Path(__file__).resolve().parents[2]


def paragraphs(path: Path) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))]


def test_the_docs_never_say_the_console_erases_in_every_tenant_without_the_setting() -> None:
    for doc in (ROOT / "README.md", ROOT / "docs" / "operations.md"):
        for paragraph in paragraphs(doc):
            about_console = "support console" in paragraph.lower() or "carry it out" in paragraph
            if about_console and re.search(r"every (tenant|organisation)", paragraph):
                assert "MEMORY_ERASURE_SCOPE" in paragraph, f"{doc.name}: {paragraph[:300]}"
    readme = " ".join(paragraphs(ROOT / "README.md"))
    assert "everything kept about them in their organisation" in readme


def test_the_page_says_what_the_erasure_reaches_and_does_exactly_that(console: Console) -> None:
    namesake = Place(console.a1.owner_id, console.b.id)  # tenant B's own person with a1's owner id
    console.remember(namesake, "Dreams of a pangolin sanctuary", kind="goal")
    request_id = log(console)
    staff = console.client(console.sA)
    said = page_text(staff.get(f"/staff/erasure/{request_id}"))
    assert "in their organisation" in said and "every organisation" not in said
    assert staff.post(f"/staff/erasure/{request_id}", data={"confirm": console.a1.email}).status_code == 303
    assert [m.text for m in console.runtime.service.list(namesake).items] == ["Dreams of a pangolin sanctuary"]
    assert console.runtime.service.list(console.a1.place).items == []
