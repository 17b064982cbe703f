"""While memory is paused the Add form says so before anything is typed, says how to resume, and
cannot be submitted (issue 27, item 5): its controls are disabled in the page itself, with or
without JavaScript, and the pause and resume answers change the form too; a post that gets through
anyway (forged, or from an old tab) is still refused `paused` and keeps nothing."""

from __future__ import annotations

import re

import pytest

from .conftest import HX, World, page_text
from .test_import import upload

SAYS_PAUSED = "Memory is paused, so nothing new can be added until you resume it."


def add_form(html: str) -> str:
    found = re.search(r'<form id="add-form".*?</form>', html, flags=re.S)
    assert found, "no add form"
    return found.group(0)


def disabled(form: str) -> bool:
    return bool(re.search(r"<fieldset[^>]*\sdisabled", form))


def test_the_add_form_is_disabled_and_says_why_while_paused(world: World) -> None:
    client = world.client(world.ada)
    assert not disabled(add_form(client.get("/memories").get_data(as_text=True)))
    world.runtime.service.pause(world.ada.place)

    form = add_form(client.get("/memories").get_data(as_text=True))
    assert disabled(form)
    # Said first: before the field, in words, with the way out.
    assert form.index(SAYS_PAUSED) < form.index('<textarea id="new-text"')
    assert re.search(r'<button type="submit" name="then" value="add" formaction="/account/resume"', form)
    assert "Resume to add memories" in form
    # Every control that writes sits inside the disabled fieldset; the way out does not.
    fieldset = re.search(r"<fieldset.*?</fieldset>", form, flags=re.S)
    assert fieldset and 'id="new-text"' in fieldset.group(0) and 'id="new-kind"' in fieldset.group(0)
    assert ">Add</button>" in fieldset.group(0) and "Resume to add" not in fieldset.group(0)

    french = add_form(world.client(world.bob).get("/memories").get_data(as_text=True))
    assert not disabled(french)  # Bob's memory is not paused
    world.runtime.service.pause(world.bob.place)
    french = add_form(world.client(world.bob).get("/memories").get_data(as_text=True))
    assert disabled(french) and "rien de nouveau ne peut être ajouté" in french


@pytest.mark.parametrize("headers", [{}, HX], ids=["plain", "htmx"])
def test_a_post_that_gets_through_anyway_is_refused(world: World, headers: dict[str, str]) -> None:
    world.runtime.service.pause(world.ada.place)
    client = world.client(world.ada)
    answer = client.post("/memories", data={"text": "Plays chess on Sundays", "kind": "fact"}, headers=headers)
    refusal = "Memory is paused: nothing is learnt or changed until you resume it."
    if headers:
        assert answer.status_code == 422 and refusal in page_text(answer)
        assert disabled(answer.get_data(as_text=True))  # the form it answers is the paused one
    else:
        assert answer.status_code == 303 and refusal in page_text(client.get("/memories"))
    assert world.texts(world.ada) == []


def test_pausing_and_resuming_change_the_form_at_once(world: World) -> None:
    client = world.client(world.ada)
    # htmx: the pause answer carries the form, disabled, with what was typed kept in it.
    paused = client.post("/account/pause", data={"text": "Half a thought"}, headers=HX).get_data(as_text=True)
    form = add_form(paused)
    assert 'hx-swap-oob="true"' in form and disabled(form) and "Half a thought" in form
    assert "data-autofocus" not in form  # focus stays on the panel's new button
    assert re.search(r"Resume memory", paused.split('<form id="add-form"')[0])

    # Resumed from the form itself: the form is enabled again and the cursor goes to its field.
    resumed = client.post("/account/resume", data={"then": "add"}, headers=HX).get_data(as_text=True)
    form = add_form(resumed)
    assert not disabled(form) and SAYS_PAUSED not in form
    assert re.search(r'<textarea id="new-text"[^>]*data-autofocus', form)
    assert "data-autofocus" not in resumed.split('<form id="add-form"')[0]
    assert not world.runtime.service.is_paused(world.ada.place)

    # Without JavaScript: the form's own Resume button posts the form to resume, and the page after it
    # has the form enabled.
    world.runtime.service.pause(world.ada.place)
    answer = client.post("/account/resume", data={"then": "add", "text": ""})
    assert answer.status_code == 303 and answer.headers["Location"] == "/memories#add-form"
    page = client.get("/memories")
    assert not disabled(add_form(page.get_data(as_text=True)))
    assert "Resumed: the assistant may learn again." in page_text(page)


def test_with_csrf_the_forms_resume_button_carries_the_token(world: World) -> None:
    """The Resume button inside the add form posts that form: its CSRF token goes with it."""
    world.runtime.service.pause(world.ada.place)
    app = world.app(csrf=True)
    client = app.test_client()
    login = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', login)
    assert token
    client.post("/login", data={"email": world.ada.email, "password": "correct horse battery",
                                "csrf_token": token.group(1)})
    form = add_form(client.get("/memories").get_data(as_text=True))
    field = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert field
    assert client.post("/account/resume", data={"then": "add"}).status_code == 400  # no token: refused
    assert world.runtime.service.is_paused(world.ada.place)
    answer = client.post("/account/resume", data={"then": "add", "csrf_token": field.group(1)})
    assert answer.status_code == 303 and not world.runtime.service.is_paused(world.ada.place)


@pytest.mark.parametrize("headers", [{}, HX], ids=["plain", "htmx"])
def test_the_import_page_says_it_too_and_an_import_is_refused(world: World, headers: dict[str, str]) -> None:
    client = world.client(world.ada)
    assert "import-paused" not in client.get("/account/import").get_data(as_text=True)
    world.runtime.service.pause(world.ada.place)
    page = client.get("/account/import").get_data(as_text=True)
    assert SAYS_PAUSED in page and disabled(page)
    assert page.index(SAYS_PAUSED) < page.index('id="import-file"')

    refused = upload(client, b"Likes tea\n")
    assert refused.status_code == 422
    assert "Memory is paused: nothing is learnt or changed until you resume it." in page_text(refused)
    sealed = client.post("/account/import", data={"content": "TGlrZXMgdGVhCg==", "confirmed": "1"}, headers=headers)
    assert sealed.status_code == 422 and world.texts(world.ada) == []

    resumed = client.post("/account/resume", data={"then": "import"})
    assert resumed.status_code == 303 and resumed.headers["Location"] == "/account/import"
    assert "import-paused" not in client.get("/account/import").get_data(as_text=True)
