"""Every page a person reaches from their memories leads back to them (issue 38, item 15): the
Import page and "Forget everything about…" had no "Back to your memories" link, before and after
their preview, as Connected apps and a memory's page have."""

from __future__ import annotations

import io
import re

import pytest
from werkzeug.test import TestResponse

from .conftest import HX, World


def back_links(answer: TestResponse) -> list[str]:
    """Where the page's "Back to your memories" links go."""
    return re.findall(r'<a href="([^"]*)">Back to your memories</a>', answer.get_data(as_text=True))


@pytest.mark.parametrize("headers", [{}, HX], ids=["plain", "htmx"])
def test_import_and_forget_about_lead_back_to_the_memories(world: World, headers: dict[str, str]) -> None:
    world.remember(world.ada, "Has a cat called Miso")
    client = world.client(world.ada)
    pages = {
        "import": client.get("/account/import", headers=headers),
        "import preview": client.post("/account/import", headers=headers, data={
            "file": (io.BytesIO(b"- Keeps bees\n- Has a cat called Miso\n"), "memories.txt")}),
        "forget about": client.get("/memories/forget-about", headers=headers),
        "forget about, its preview": client.post("/memories/forget-about/preview", headers=headers,
                                                 data={"subject": "cat"}),
    }
    for name, answer in pages.items():
        assert answer.status_code == 200, name
        assert back_links(answer) == ["/memories"], name
