"""Which language the portal speaks to a person (issue 38, item 2): until they choose one, their
browser's (Accept-Language), before and after signing in, page and htmx fragment alike; once they
choose, their choice, whatever the browser says. An account made without a language holds no
choice (it used to hold "en", so a French browser got English after signing in). The switch is
two buttons, one per language, each a 44 px target (tests/e2e), a plain form without JavaScript."""

from __future__ import annotations

import re

from .conftest import HX, World, page_text, sign_in

FRENCH = {"Accept-Language": "fr-FR,fr;q=0.9,en;q=0.5"}
ENGLISH = {"Accept-Language": "en-GB,en;q=0.9"}


def test_until_a_person_chooses_their_browsers_language_wins(world: World) -> None:
    chloe = world.chloe
    assert world.runtime.accounts.get(chloe.id).language is None  # type: ignore[union-attr]  # never chose
    client = world.client()
    assert '<html lang="fr">' in client.get("/login", headers=FRENCH).get_data(as_text=True)
    sign_in(client, chloe.email, headers=FRENCH)
    page = client.get("/memories", headers=FRENCH)
    assert '<html lang="fr">' in page.get_data(as_text=True)
    assert "Ce dont votre assistant se souvient à votre sujet" in page_text(page)
    fragment = client.get("/memories?q=zzz", headers={**FRENCH, **HX})
    assert "Aucun résultat." in page_text(fragment)
    assert '<html lang="en">' in client.get("/memories", headers=ENGLISH).get_data(as_text=True)
    assert '<html lang="en">' in client.get("/memories").get_data(as_text=True)  # no preference said: English

    # She chooses English on a French browser: English from now on.
    answer = client.post("/account/language", data={"language": "en"}, headers=FRENCH)
    assert answer.status_code == 303
    assert world.runtime.accounts.get(chloe.id).language == "en"  # type: ignore[union-attr]
    assert '<html lang="en">' in client.get("/memories", headers=FRENCH).get_data(as_text=True)


def test_a_chosen_language_wins_over_the_browser(world: World) -> None:
    bob = world.client(world.bob)  # chose French
    assert '<html lang="fr">' in bob.get("/memories", headers=ENGLISH).get_data(as_text=True)
    ada = world.client(world.ada)  # chose English
    assert '<html lang="en">' in ada.get("/memories", headers=FRENCH).get_data(as_text=True)


def test_the_switch_is_a_button_per_language(world: World) -> None:
    client = world.client(world.chloe)
    html = client.get("/memories", headers=FRENCH).get_data(as_text=True)
    switch = re.search(r'<form[^>]*action="/account/language".*?</form>', html, flags=re.S)
    assert switch, "no language switch"
    form = switch.group(0)
    assert "<select" not in form
    buttons = re.findall(r'<button type="submit" name="language" value="(\w+)"([^>]*)>(.*?)</button>', form, flags=re.S)
    assert [(value, re.sub(r"<[^>]+>", "", label).strip()) for value, _attrs, label in buttons] == [
        ("en", "English"), ("fr", "Français")]
    pressed = {value: 'aria-pressed="true"' in attrs for value, attrs, _label in buttons}
    assert pressed == {"en": False, "fr": True}  # the language the page is in
    assert 'lang="en"' in buttons[0][1] or 'lang="en"' in buttons[0][2]  # each name in its own language
    assert re.search(r'aria-label="Langue"|<legend[^>]*>Langue</legend>', form)
