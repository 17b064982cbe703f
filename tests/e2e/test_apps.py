"""Connected apps in Chromium (issue 18): the person finds which app used their memory and what it
did, blocks it — and the app, calling the live API with its own key, is refused `app_blocked` —
then resumes it. The memory's history says which app used it and when."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from portal.domain.apps import app_of

from ..screenshots import screenshot
from .conftest import CAT, TEA, LiveServer, Person, row


def test_the_person_sees_an_app_and_its_counts_blocks_it_and_the_api_refuses_it(
    signed_in: Page, live_server: LiveServer, person: Person,
) -> None:
    page = signed_in
    key, token = live_server.runtime.api_keys.create(person.place.scope, ("memories:read", "memories:write"),
                                                     name="Claude Desktop")
    api = f"{live_server.url}/api/v1/people/{person.place.owner_id}"
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(headers=auth, timeout=10) as client:
        hits: list[str] = []
        for query in ("green tea", "cat"):
            answer = client.post(f"{api}/recall", json={"query": query})
            assert answer.status_code == 200
            hits += [h["memory"]["id"] for h in answer.json()["items"]]
        assert person.memory_ids[TEA] in hits and person.memory_ids[CAT] in hits
        made = client.post(f"{api}/memories", json={"text": "Keeps bees"})
        assert made.status_code == 201
        used = len(set(hits) | {made.json()["memory"]["id"]})

        page.get_by_role("link", name="Connected apps").click()
        card = page.locator(f"#app-{app_of(key).id}")
        expect(card.get_by_role("heading")).to_contain_text("Claude Desktop")
        expect(card.locator('[data-action="recalled"]')).to_have_text(str(len(hits)))
        expect(card.locator('[data-action="remembered"]')).to_have_text("1")
        expect(card).to_contain_text(f"{used} memories used")
        expect(page.get_by_text("Keeps bees")).to_have_count(0)  # counts, never words
        screenshot(page, "connected-apps.png")

        card.get_by_role("button", name="Block").click()
        expect(page.get_by_test_id("toast")).to_contain_text("Claude Desktop can no longer read or change your memory.")
        expect(card.get_by_test_id("app-state")).to_have_text("blocked")
        refused = client.post(f"{api}/recall", json={"query": "green tea"})
        assert refused.status_code == 403 and refused.json()["code"] == "app_blocked"
        assert client.get(f"{api}/memories").status_code == 403

        card.get_by_role("button", name="Resume").click()
        expect(page.get_by_test_id("toast")).to_contain_text("Claude Desktop may use your memory again.")
        expect(card.get_by_test_id("app-state")).to_have_count(0)
        assert client.post(f"{api}/recall", json={"query": "green tea"}).status_code == 200

    page.goto(f"{live_server.url}/memories")
    row(page, TEA).get_by_role("link", name="Details").click()
    expect(page.get_by_test_id("use").first).to_contain_text("Used by Claude Desktop on")
    expect(page.get_by_test_id("use").first).to_contain_text("recalled it (2 times)")
    page.goto(f"{live_server.url}/memories")
    expect(row(page, CAT)).to_be_visible()
