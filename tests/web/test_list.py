""""My memories": newest first, filter by kind, search by words, pages, "new" badges, escaping, the
AI-off banner and the headers that keep the page and its fragments apart and scripts out."""

from __future__ import annotations

import re

from portal.domain.types import Source

from .conftest import HX, World, page_text, row_ids


def test_newest_first_with_what_each_memory_is(world: World) -> None:
    first = world.remember(world.ada, "I was born in London", kind="fact", importance=5, sources=(Source("portal"),))
    second = world.remember(world.ada, "I want to run a marathon", kind="goal", origin="inferred",
                            sources=(Source("consolidation", "conv-1"),))
    answer = world.client(world.ada).get("/memories")
    assert answer.status_code == 200
    assert row_ids(answer) == [second.id, first.id]
    text = page_text(answer)
    assert "I want to run a marathon Goal Importance 3/5 The assistant learnt it Mar 1, 2026" in text
    assert "I was born in London Fact Importance 5/5 You wrote it Mar 1, 2026" in text


def test_an_empty_list_says_so(world: World) -> None:
    assert "The assistant keeps nothing about you yet." in page_text(world.client(world.ada).get("/memories"))


def test_filter_by_kind(world: World) -> None:
    goal = world.remember(world.ada, "I want to learn Welsh", kind="goal")
    world.remember(world.ada, "I like jazz", kind="preference")
    client = world.client(world.ada)
    assert row_ids(client.get("/memories?kind=goal")) == [goal.id]
    fragment = client.get("/memories?kind=goal", headers=HX)
    assert row_ids(fragment) == [goal.id]
    # A kind that does not exist is no filter at all, not an error.
    assert len(row_ids(client.get("/memories?kind=secret"))) == 2


def test_search_by_words(world: World) -> None:
    tea = world.remember(world.ada, "I drink green tea every morning")
    cafe = world.remember(world.ada, "My favourite café is on Rue Oberkampf")
    world.remember(world.ada, "I play the cello")
    client = world.client(world.ada)
    answer = client.get("/memories", query_string={"q": "tea"})
    assert row_ids(answer) == [tea.id]
    assert "Memories matching “tea”" in page_text(answer)
    assert row_ids(client.get("/memories", query_string={"q": "cafe"})) == [cafe.id]  # accents folded
    fragment = client.get("/memories", query_string={"q": "cello"}, headers=HX)
    assert fragment.get_data(as_text=True).lstrip().startswith('<div id="results" data-kind="" data-q="cello">')
    assert "I play the cello" in page_text(fragment)
    nothing = client.get("/memories", query_string={"q": "trombone"})
    assert row_ids(nothing) == [] and "Nothing matches." in page_text(nothing)


def test_search_and_kind_together(world: World) -> None:
    world.remember(world.ada, "I want to visit Kyoto", kind="goal")
    liked = world.remember(world.ada, "I like Kyoto in autumn", kind="preference")
    answer = world.client(world.ada).get("/memories", query_string={"q": "Kyoto", "kind": "preference"})
    assert row_ids(answer) == [liked.id]


def test_pages_of_25_with_a_cursor(world: World) -> None:
    made = [world.remember(world.ada, f"Memory number {i} about topic{i}").id for i in range(30)]
    newest_first = made[::-1]
    client = world.client(world.ada)
    first = client.get("/memories")
    assert row_ids(first) == newest_first[:25]
    link = re.search(r'href="(/memories\?cursor=[^"]+)"', first.get_data(as_text=True))
    assert link and "Older memories" in page_text(first)
    second = client.get(link.group(1).replace("&amp;", "&"))
    assert row_ids(second) == newest_first[25:]
    assert "Older memories" not in page_text(second)
    # htmx asks for the next page as a fragment that replaces the results.
    fragment = client.get(link.group(1).replace("&amp;", "&"), headers=HX)
    assert row_ids(fragment) == newest_first[25:]
    assert "<html" not in fragment.get_data(as_text=True)
    # A broken cursor starts again from the first page instead of failing.
    assert row_ids(client.get("/memories?cursor=not-a-cursor")) == newest_first[:25]


def test_pages_keep_the_kind_filter(world: World) -> None:
    goals = [world.remember(world.ada, f"Goal {i} is to see place{i}", kind="goal").id for i in range(27)]
    world.remember(world.ada, "I like figs", kind="preference")
    client = world.client(world.ada)
    first = client.get("/memories?kind=goal")
    link = re.search(r'href="(/memories\?[^"]*cursor=[^"]+)"', first.get_data(as_text=True))
    assert link and "kind=goal" in link.group(1)
    second = client.get(link.group(1).replace("&amp;", "&"))
    assert row_ids(first) + row_ids(second) == goals[::-1]


def test_new_badge_stays_until_the_person_marks_it_seen(world: World) -> None:
    learnt = world.remember(world.ada, "Moved to Lyon last spring", origin="inferred", channel="background")
    said = world.remember(world.ada, "I like cheese")
    client = world.client(world.ada)

    def badges(html: str) -> dict[str, bool]:
        rows = re.split(r'(?=<li id="m-)', html)[1:]
        return {re.match(r'<li id="m-([^"]+)"', r).group(1): 'class="badge new"' in r for r in rows}  # type: ignore[union-attr]

    first = client.get("/memories").get_data(as_text=True)
    assert badges(first) == {learnt.id: True, said.id: False}
    assert ">New<" in first
    # A GET changes nothing (a prefetch or a reload must not hide what was learnt)...
    again = client.get("/memories").get_data(as_text=True)
    assert badges(again) == {learnt.id: True, said.id: False}
    assert 'data-testid="new-banner"' in again
    # ...the banner's button does, for the ids it lists and no others.
    marked = client.post("/memories/new/seen", data={"id": [learnt.id, said.id, "not-an-id"]})
    assert marked.status_code == 303
    after = client.get(marked.headers["Location"]).get_data(as_text=True)
    assert "1 memory marked as seen." in after
    assert badges(after) == {learnt.id: False, said.id: False}
    assert 'data-testid="new-banner"' not in after


def test_memory_text_is_escaped_everywhere(world: World) -> None:
    evil = "<script>alert(1)</script> & <b onmouseover=x>bold</b>"
    memory = world.remember(world.ada, evil)
    client = world.client(world.ada)
    pages = [
        client.get("/memories"),
        client.get("/memories", headers=HX),
        client.get(f"/memories/{memory.id}", headers=HX),
        client.get(f"/memories/{memory.id}/edit"),
        client.get(f"/memories/{memory.id}/edit", headers=HX),
        client.get(f"/memories/{memory.id}/history"),
        client.get("/memories", query_string={"q": "<script>alert(2)</script> alert"}),
    ]
    for answer in pages:
        html = answer.get_data(as_text=True)
        assert answer.status_code == 200
        assert "<script>alert" not in html and "<b onmouseover" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b onmouseover=x&gt;bold&lt;/b&gt;" in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in pages[-1].get_data(as_text=True)


def test_ai_off_banner(world: World) -> None:
    world.remember(world.ada, "I cycle to work")
    client = world.client(world.ada)
    assert 'data-testid="ai-off"' not in client.get("/memories").get_data(as_text=True)
    world.runtime.tenants.set_ai(world.tenant_id, False)
    answer = client.get("/memories")
    assert 'data-testid="ai-off"' in answer.get_data(as_text=True)
    assert "The assistant's AI is switched off for your organisation:" in page_text(answer)
    assert "I cycle to work" in page_text(answer)  # the person still sees everything


def test_pages_that_answer_fragments_vary_on_hx_request(world: World) -> None:
    memory = world.remember(world.ada, "I sing in a choir")
    client = world.client(world.ada)
    for path in ("/memories", "/memories?q=choir", f"/memories/{memory.id}/edit", f"/memories/{memory.id}"):
        page, fragment = client.get(path), client.get(path, headers=HX)
        assert page.get_data() != fragment.get_data(), path
        assert "<html" not in fragment.get_data(as_text=True), path
        for answer in (page, fragment):
            assert "HX-Request" in answer.headers.get("Vary", ""), path


def test_csp_forbids_inline_scripts_and_the_page_has_none(world: World) -> None:
    world.remember(world.ada, "I keep bees")
    client = world.client(world.ada)
    for answer in (world.client().get("/login"), client.get("/memories")):
        csp = answer.headers["Content-Security-Policy"]
        directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
        assert directives["script-src"] == "'self'"
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert "frame-ancestors 'none'" in csp
        html = answer.get_data(as_text=True)
        # Every script comes from a file; no inline handlers the CSP would block anyway.
        scripts = re.findall(r"<script\b[^>]*>", html)
        assert scripts and all(" src=" in s for s in scripts)
        assert all(not body.strip() for body in re.findall(r"<script\b[^>]*>(.*?)</script>", html, flags=re.S))
        assert re.search(r"\son[a-z]+\s*=", re.sub(r"&lt;.*?&gt;", "", html)) is None
        assert "hx-on" not in html
        assert answer.headers["X-Frame-Options"] == "DENY"
