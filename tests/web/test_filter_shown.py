"""The kind filter always says what the list shows (issue 27, item 6): the server renders the
selected kind with the list, the browser is told not to put back an older form value, and htmx
keeps no copy of a page to bring back on Back (it reloads it from the server instead). The browser
side (filter, go elsewhere, Back) is tests/e2e/test_portal_walkthrough.py."""

from __future__ import annotations

import json
import re

import pytest

from .conftest import HX, World, row_ids


def kind_select(html: str) -> str:
    found = re.search(r'<select id="filter-kind".*?</select>', html, flags=re.S)
    assert found, "no kind filter"
    return found.group(0)


@pytest.mark.parametrize("headers", [{}, HX], ids=["plain", "htmx"])
def test_the_list_and_its_filter_agree(world: World, headers: dict[str, str]) -> None:
    goal = world.remember(world.ada, "Wants to learn Japanese", kind="goal")
    world.remember(world.ada, "Likes tea", kind="preference")
    client = world.client(world.ada)
    answer = client.get("/memories?kind=goal", headers=headers)
    assert row_ids(answer) == [goal.id] and "HX-Request" in answer.headers["Vary"]
    if headers:  # htmx swaps the list only: the select the person just changed stays as they set it
        assert 'id="filter-kind"' not in answer.get_data(as_text=True)
        return
    select = kind_select(answer.get_data(as_text=True))
    assert 'autocomplete="off"' in select.split(">")[0]
    assert re.findall(r'<option value="([a-z]*)" ?selected', select) == ["goal"]
    assert re.search(r'<input id="q"[^>]*autocomplete="off"', answer.get_data(as_text=True))

    # A kind the portal does not have: the whole list, and the select says "All kinds".
    everything = client.get("/memories?kind=nonsense")
    assert len(row_ids(everything)) == 2
    assert re.findall(r"<option [^>]*selected", kind_select(everything.get_data(as_text=True))) == []


def test_htmx_keeps_no_copy_of_a_page_to_bring_back(world: World) -> None:
    html = world.client(world.ada).get("/memories").get_data(as_text=True)
    found = re.search(r"<meta name=\"htmx-config\" content='([^']+)'>", html)
    assert found
    config = json.loads(found.group(1))
    assert (config["historyCacheSize"], config["refreshOnHistoryMiss"]) == (0, True)
