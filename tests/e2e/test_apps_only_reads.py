"""An app that only reads, in Chromium (issue 29, item 5): an assistant recalls through the live API
and sends conversations marked temporary (answered `temporary`, nothing learnt); the person's
Connected apps page then says the app only reads and how many conversations it kept temporary, while
an app that saved a memory is not said to. In English and French, on a desktop and on a phone (no
sideways scroll, every control 44 px tall), with and without JavaScript, axe clean."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import BrowserContext, expect

from portal.domain.apps import app_of

from ..axe import violations
from ..screenshots import screenshot
from .conftest import LiveServer, make_person, sign_in
from .test_every_page import MEASURE

PHONE = {"width": 375, "height": 812}
SAID = {"en": ("Has only read your memories so far", "3 conversations kept temporary: nothing learnt"),
        "fr": ("N'a fait que lire vos souvenirs jusqu'ici", "3 conversations restées temporaires\u00a0: rien n'en a été appris")}


@pytest.mark.parametrize(("language", "device"), [("en", "desktop"), ("en", "phone"), ("fr", "desktop"), ("fr", "phone")])
def test_the_person_sees_that_an_app_only_reads(
    new_context: Callable[..., BrowserContext], live_server: LiveServer, language: str, device: str,
) -> None:
    who = make_person(live_server.runtime, language=language)
    keys = live_server.runtime.api_keys
    reader, token = keys.create(who.place.scope, ("memories:read", "consolidate"), name="Claude Desktop")
    writer, writer_token = keys.create(who.place.scope, ("memories:write",), name="Support bot")
    api = f"{live_server.url}/api/v1/people/{who.place.owner_id}"
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=10) as client:
        assert client.post(f"{api}/recall", json={"query": "green tea"}).status_code == 200
        for n in range(3):
            answer = client.post(f"{api}/consolidate", json={
                "transcript": [{"role": "user", "text": "Between us: I am moving to zqlanvir."}],
                "ref": f"conv-{n}", "temporary": True, "wait": n % 2 == 0})
            assert (answer.status_code, answer.json()["status"]) == (200, "temporary")
    made = httpx.post(f"{api}/memories", json={"text": "Keeps bees"}, timeout=10,
                      headers={"Authorization": f"Bearer {writer_token}"})
    assert made.status_code == 201

    only_reads, temporary = SAID[language]
    options = {"bypass_csp": True, **({"viewport": PHONE} if device == "phone" else {})}
    page = new_context(**options).new_page()
    sign_in(page, live_server.url, who)
    page.goto(f"{live_server.url}/account/apps")
    card = page.locator(f"#app-{app_of(reader).id}")
    expect(card.get_by_test_id("app-reads-only")).to_have_text(only_reads)
    expect(card.get_by_test_id("app-temporary")).to_have_text(temporary)
    other = page.locator(f"#app-{app_of(writer).id}")
    expect(other.get_by_role("heading")).to_contain_text("Support bot")
    expect(other.get_by_test_id("app-reads-only")).to_have_count(0)
    expect(other.get_by_test_id("app-temporary")).to_have_count(0)
    expect(page.get_by_text("zqlanvir")).to_have_count(0)
    assert violations(page, f"connected apps, an app that only reads ({language}, {device})") == []
    if device == "phone":  # the phone's rules: nothing scrolls sideways, every control 44 px tall
        seen = page.evaluate(MEASURE)
        assert seen["wide"] <= seen["inner"], f"{seen['wide']} px wide at {seen['inner']}: {seen['past']}"
        assert seen["small"] == [], f"controls under 44 px: {seen['small']}"
    card.scroll_into_view_if_needed()
    screenshot(page, f"connected-apps-only-reads-{language}-{device}.png")

    plain = new_context(java_script_enabled=False, **options).new_page()  # the same page without JavaScript
    sign_in(plain, live_server.url, who)
    plain.goto(f"{live_server.url}/account/apps")
    expect(plain.locator(f"#app-{app_of(reader).id}").get_by_test_id("app-reads-only")).to_have_text(only_reads)
