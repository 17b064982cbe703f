"""Forget everything about … in the portal (issue 29, item 4), as a browser without JavaScript sends
it: the subject's form, its preview (each matching memory ticked, its words escaped) and the
confirmation, answered by the list with a toast; CSRF on every form; English and French; a preview
too old or an id it did not list refused with the form again; nothing of another person reachable."""

from __future__ import annotations

import re

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from .conftest import PASSWORD, World, csrf_token_of, page_text, sign_in

START = "/memories/forget-about"


def ticked(answer: TestResponse) -> list[str]:
    """The ids of the memories the preview lists, each with its box ticked."""
    html = answer.get_data(as_text=True)
    return re.findall(r'<input type="checkbox" name="ids" value="([^"]+)" autocomplete="off" checked>', html)


def token_of(answer: TestResponse) -> str:
    found = re.search(r'name="preview" value="([^"]+)"', answer.get_data(as_text=True))
    assert found, "the preview carries no token"
    return found.group(1)


def test_preview_untick_and_confirm_without_javascript(world: World) -> None:
    green = world.remember(world.ada, "Likes green tea")
    four = world.remember(world.ada, "Drinks tea at four")
    world.remember(world.ada, "Runs on Mondays")
    client = world.client(world.ada)
    assert client.get("/memories").status_code == 200 and START in client.get("/memories").get_data(as_text=True)
    form = client.get(START)
    assert form.status_code == 200 and 'action="/memories/forget-about/preview"' in form.get_data(as_text=True)
    preview = client.post(f"{START}/preview", data={"subject": "tea"})
    assert preview.status_code == 200
    assert sorted(ticked(preview)) == sorted([green.id, four.id])
    said = page_text(preview)
    assert "2 memories are about “tea”" in said and "Likes green tea" in said and "Runs on Mondays" not in said
    assert world.texts(world.ada) == ["Runs on Mondays", "Drinks tea at four", "Likes green tea"]  # nothing went yet
    # The person unticks "Drinks tea at four": the browser sends the ticked boxes only.
    done = client.post(START, data={"preview": token_of(preview), "ids": [green.id], "subject": "tea"})
    assert done.status_code == 303 and done.headers["Location"].endswith("/memories")
    assert world.texts(world.ada) == ["Runs on Mondays", "Drinks tea at four"]
    listed = page_text(client.get("/memories"))
    assert "1 memory forgotten, with every earlier version." in listed
    audit = [e for e in world.runtime.store.audit_trail() if e.action == "person.forgot_matching"]
    assert [(e.actor_id, e.actor_role, e.counts) for e in audit] == [(world.ada.id, "member", {"memories": 1,
                                                                                               "revisions": 0})]


def test_the_words_shown_are_escaped_and_a_search_leads_here(world: World) -> None:
    world.remember(world.ada, "<img src=x onerror=alert(1)> tea")
    client = world.client(world.ada)
    listed = client.get("/memories?q=tea").get_data(as_text=True)
    assert 'href="/memories/forget-about?q=tea"' in listed
    assert 'value="tea"' in client.get(f"{START}?q=tea").get_data(as_text=True)  # the subject, ready
    html = client.post(f"{START}/preview", data={"subject": "<b>tea</b>"}).get_data(as_text=True)
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt; tea" in html
    assert "<b>tea</b>" not in html and "&lt;b&gt;tea&lt;/b&gt;" in html


def test_a_memory_changed_since_the_preview_stays_and_the_toast_says_so(world: World) -> None:
    green = world.remember(world.ada, "Likes green tea")
    four = world.remember(world.ada, "Drinks tea at four")
    client = world.client(world.ada)
    preview = client.post(f"{START}/preview", data={"subject": "tea"})
    world.runtime.service.update(world.ada.place, four.id, text="Drinks tea at five")
    client.post(START, data={"preview": token_of(preview), "ids": [green.id, four.id]})
    assert world.texts(world.ada) == ["Drinks tea at five"]
    assert ("1 memory forgotten, with every earlier version. 1 changed since the preview and was kept: preview again "
            "to forget it.") in page_text(client.get("/memories"))


def test_a_preview_too_old_or_an_id_it_did_not_list_gives_the_form_again(world: World) -> None:
    green = world.remember(world.ada, "Likes green tea")
    chloes = world.remember(world.chloe, "Drinks tea at four")
    client = world.client(world.ada)
    token = token_of(client.post(f"{START}/preview", data={"subject": "tea"}))
    stranger = client.post(START, data={"preview": token, "ids": [green.id, chloes.id], "subject": "tea"})
    assert stranger.status_code == 422
    assert "Only memories the preview listed can be forgotten this way." in page_text(stranger)
    assert 'value="tea"' in stranger.get_data(as_text=True)  # the subject, to preview again
    altered = client.post(START, data={"preview": token[:-2] + "xx", "ids": [green.id]})
    assert altered.status_code == 422 and "Forgetting by subject needs a valid preview" in page_text(altered)
    assert world.texts(world.ada) == ["Likes green tea"] and world.texts(world.chloe) == ["Drinks tea at four"]
    empty = client.post(f"{START}/preview", data={"subject": "  "})
    assert empty.status_code == 422 and "Say what to forget about" in page_text(empty)


def test_nothing_matching_says_so(world: World) -> None:
    world.remember(world.ada, "Likes green tea")
    client = world.client(world.ada)
    answer = client.post(f"{START}/preview", data={"subject": "zeppelins"})
    assert answer.status_code == 200 and "Nothing kept is about “zeppelins”." in page_text(answer)
    assert ticked(answer) == []


def test_every_form_needs_its_csrf_token(world: World) -> None:
    green = world.remember(world.ada, "Likes green tea")
    client: FlaskClient = world.app(csrf=True).test_client()
    token = csrf_token_of(client.get("/login"))
    assert client.post("/login", data={"email": "ada@example.com", "password": PASSWORD, "csrf_token": token}
                       ).status_code == 303
    assert client.post(f"{START}/preview", data={"subject": "tea"}).status_code == 400
    form = client.get(START)
    preview = client.post(f"{START}/preview", data={"subject": "tea", "csrf_token": csrf_token_of(form)})
    assert preview.status_code == 200 and ticked(preview) == [green.id]
    assert client.post(START, data={"preview": token_of(preview), "ids": [green.id]}).status_code == 400
    assert world.texts(world.ada) == ["Likes green tea"]  # the tokenless confirmation changed nothing
    done = client.post(START, data={"preview": token_of(preview), "ids": [green.id],
                                    "csrf_token": csrf_token_of(preview)})
    assert done.status_code == 303 and world.texts(world.ada) == []


def test_the_pages_and_the_toast_speak_french(world: World) -> None:
    tea = world.remember(world.bob, "Aime le thé vert")
    client = world.client()
    sign_in(client, world.bob.email)
    form = page_text(client.get(START))
    assert "Tout oublier sur…" in form and "Aperçu" in form
    preview = client.post(f"{START}/preview", data={"subject": "thé"})
    said = page_text(preview)
    assert "1 souvenir concerne « thé »" in said and "Oublier les souvenirs cochés" in said
    client.post(START, data={"preview": token_of(preview), "ids": [tea.id]})
    assert "1 souvenir oublié, avec toutes ses versions précédentes." in page_text(client.get("/memories"))
    assert world.texts(world.bob) == []
