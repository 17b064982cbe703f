"""The person's controls: forget, pin, pause, erase everything, download, and the AI switched off."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from playwright.sync_api import Dialog, Page, expect

from portal.domain.types import Refused, Saved

from ..screenshots import screenshot
from .conftest import CAT, OTHER_TEXT, TEA, LiveServer, Person, editing_row, open_editor, row, sign_in


def test_forget_asks_first_and_the_memory_is_gone(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    questions: list[str] = []

    def answer(dialog: Dialog) -> None:
        questions.append(dialog.message)
        if len(questions) == 1:
            dialog.dismiss()  # a change of mind keeps the memory
        else:
            dialog.accept()

    page.on("dialog", answer)
    row(page, TEA).get_by_role("button", name="Forget").click()
    expect(row(page, TEA)).to_be_visible()
    assert questions == ["Forget this memory for good, with every earlier version?"]

    row(page, TEA).get_by_role("button", name="Forget").click()
    expect(page.get_by_test_id("toast")).to_contain_text("Forgotten, with every earlier version.")
    expect(row(page, TEA)).to_have_count(0)
    assert len(questions) == 2
    page.reload()
    expect(row(page, CAT)).to_be_visible()
    expect(row(page, TEA)).to_have_count(0)
    expect(page.get_by_test_id("memory")).to_have_count(len(person.memory_ids) - 1)


def test_pin_and_unpin(signed_in: Page, person: Person) -> None:
    page = signed_in
    row(page, CAT).get_by_role("button", name="Pin").press("Enter")
    expect(row(page, CAT).get_by_text("Pinned", exact=True)).to_be_visible()
    # A keyboard user stays on the button they pressed, now saying Unpin.
    expect(row(page, CAT).get_by_role("button", name="Unpin")).to_be_focused()
    expect(page.get_by_test_id("toast")).to_contain_text("Pinned: first in the assistant's picture of you.")
    page.reload()
    expect(row(page, CAT).get_by_text("Pinned", exact=True)).to_be_visible()
    row(page, CAT).get_by_role("button", name="Unpin").click()
    expect(row(page, CAT).get_by_role("button", name="Pin")).to_be_visible()
    expect(row(page, CAT).get_by_text("Pinned", exact=True)).to_have_count(0)
    page.reload()
    expect(row(page, CAT).get_by_role("button", name="Pin")).to_be_visible()
    expect(row(page, CAT).get_by_text("Pinned", exact=True)).to_have_count(0)


def test_pause_stops_learning_until_resumed(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    service = live_server.runtime.service
    page.get_by_role("button", name="Pause memory").press("Enter")
    expect(page.get_by_role("button", name="Resume memory")).to_be_focused()
    expect(page.get_by_text("Learning is paused: the assistant keeps nothing new about you.")).to_be_visible()
    expect(page.get_by_test_id("toast")).to_contain_text("Paused: the assistant learns nothing new until you resume.")
    page.reload()
    expect(page.get_by_role("button", name="Resume memory")).to_be_visible()
    screenshot(page, "paused.png")

    # While paused, the assistant's memory learns nothing, and the add form says so before anything
    # is typed, its controls disabled (tests/e2e/test_portal_walkthrough.py)...
    with pytest.raises(Refused) as refused:
        service.remember(person.place, "Plays chess on Sundays")
    assert refused.value.code == "paused"
    expect(page.get_by_test_id("add-paused")).to_contain_text("Memory is paused, so nothing new can be added")
    expect(page.get_by_label("New memory")).to_be_disabled()
    expect(page.get_by_role("button", name="Add", exact=True)).to_be_disabled()
    # ...but the person can still correct what is kept.
    open_editor(page, CAT).fill("Has a cat called Miso, a tabby")
    editing_row(page).get_by_role("button", name="Save").click()
    expect(row(page, "Has a cat called Miso, a tabby")).to_be_visible()

    page.get_by_role("button", name="Resume memory").click()
    expect(page.get_by_role("button", name="Pause memory")).to_be_visible()
    expect(page.get_by_text("The assistant may learn from your conversations.")).to_be_visible()
    assert isinstance(service.remember(person.place, "Plays chess on Sundays"), Saved)
    page.reload()
    expect(row(page, "Plays chess on Sundays")).to_be_visible()


def test_erase_everything_needs_the_e_mail_typed(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    page.get_by_role("link", name="Erase everything").click()
    expect(page.get_by_role("heading", name="Erase everything")).to_be_visible()
    page.get_by_label("Type your e-mail address to confirm").fill("someone@else.example")
    page.get_by_role("button", name="Erase everything").click()
    expect(page.get_by_role("alert")).to_have_text("Type your e-mail address exactly to confirm.")
    screenshot(page, "erase.png")
    assert len(live_server.runtime.service.export(person.place)["memories"]) == len(person.memory_ids)

    page.get_by_label("Type your e-mail address to confirm").fill(person.email.upper())
    page.get_by_role("button", name="Erase everything").click()
    page.wait_for_url(f"{live_server.url}/memories", wait_until="load")
    expect(page.get_by_test_id("toast")).to_contain_text(
        f"Everything was erased: {len(person.memory_ids)} memories, with every earlier version."
    )
    expect(page.get_by_test_id("memory")).to_have_count(0)
    expect(page.get_by_text("The assistant keeps nothing about you yet.")).to_be_visible()
    assert live_server.runtime.service.export(person.place)["memories"] == []
    # The other person of the tenant keeps theirs.
    assert live_server.runtime.service.get(person.other_place, person.other_memory_id).text == OTHER_TEXT

    # Starting again: the first memory added replaces "nothing kept", and the box is ready for the next.
    page.get_by_label("New memory").fill("Plays chess on Sundays")
    page.get_by_role("button", name="Add").click()
    expect(row(page, "Plays chess on Sundays")).to_be_visible()
    expect(page.get_by_text("The assistant keeps nothing about you yet.")).to_be_hidden()
    expect(page.get_by_label("New memory")).to_be_focused()
    expect(page.get_by_label("New memory")).to_have_value("")


def test_asking_to_delete_my_account_asks_first(signed_in: Page, live_server: LiveServer, person: Person) -> None:
    page = signed_in
    erasures = live_server.runtime.support.erasures
    questions: list[str] = []

    def answer(dialog: Dialog) -> None:
        questions.append(dialog.message)
        if len(questions) == 1:
            dialog.dismiss()
        else:
            dialog.accept()

    page.on("dialog", answer)
    asking = page.get_by_role("button", name="Ask to delete my account")
    asking.click()
    page.wait_for_timeout(300)  # no request may follow a "no"
    assert questions == ["Ask support to delete your account and everything kept about you?"]
    assert erasures.open_for(person.place.owner_id, person.place.scope) == []
    assert ("POST", "/account/delete") not in {(m, p) for m, p, _ in live_server.recorder.seen}

    asking.click()
    expect(page.get_by_test_id("toast")).to_contain_text(
        "Your request to delete your account was sent. Support will complete it within a month."
    )
    assert len(questions) == 2
    assert len(erasures.open_for(person.place.owner_id, person.place.scope)) == 1
    # Nothing is erased until support completes the request.
    expect(page.get_by_test_id("memory")).to_have_count(len(person.memory_ids))


def test_download_my_data_as_json_and_csv(signed_in: Page, person: Person, tmp_path: Path) -> None:
    page = signed_in
    with page.expect_download() as got:
        page.get_by_role("link", name="Download my data").click()
    download = got.value
    assert download.suggested_filename == "my-memories.json"
    data = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    assert {m["text"] for m in data["memories"]} == set(person.memory_ids)
    assert data["owner_id"] == person.place.owner_id and data["settings"] == {"paused": False, "learnt_days": None}
    assert OTHER_TEXT not in json.dumps(data)

    with page.expect_download() as got:
        page.get_by_role("link", name="Download as CSV").click()
    download = got.value
    assert download.suggested_filename == "my-memories.csv"
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text(encoding="utf-8"))))
    assert {r["text"] for r in rows} == set(person.memory_ids)
    assert {r["memory_id"] for r in rows} == set(person.memory_ids.values())


def test_ai_off_shows_the_banner_and_editing_still_works(
    page: Page, live_server: LiveServer, person_ai_off: Person
) -> None:
    sign_in(page, live_server.url, person_ai_off)
    banner = page.get_by_test_id("ai-off")
    expect(banner).to_have_text(
        "The assistant's AI is switched off for your organisation: nothing about you is sent to an AI model, and"
        " the assistant learns nothing from your conversations. Its memory tools are off: it cannot save, correct,"
        " search or forget your memories by itself. Apps of your organisation can still save memories about you"
        " and find them by their words. You can still see, correct, pause, erase and download everything it keeps"
        " about you."
    )
    screenshot(page, "ai-off.png")
    open_editor(page, CAT).fill("Has a cat called Miso, who is shy")
    editing_row(page).get_by_role("button", name="Save").click()
    expect(row(page, "Has a cat called Miso, who is shy")).to_be_visible()
    page.reload()
    expect(banner).to_be_visible()
    expect(row(page, "Has a cat called Miso, who is shy")).to_be_visible()
    # Downloading works with the AI off too.
    with page.expect_download() as got:
        page.get_by_role("link", name="Download my data").click()
    data = json.loads(Path(got.value.path()).read_text(encoding="utf-8"))
    assert "Has a cat called Miso, who is shy" in {m["text"] for m in data["memories"]}

