"""Every page of the portal, the support console and the administration speaks the reader's
language: nothing a page renders in French is an English text of the catalog left as it is, a
raw code (a state, a reason, an audit action, a count key such as `app_controls`) or an ISO date;
nothing it renders in English is a raw code or key either (issue 27).

One world holds data in every state the pages show: memories edited, pinned, learnt in the
background; apps allowed, paused and blocked; erasure requests open (asked by the person, logged
by staff) and carried out; an audit log with an entry of every action the product writes. Each
page is rendered for the role that sees it, in French then in English, through the Flask test
client. The JSON API's documentation (/api/docs) is for developers and stays in English.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.mofile import read_mo
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from portal.domain.apps import apps_of
from portal.domain.audit import AuditNote
from portal.domain.people import User
from portal.domain.types import PurgeCounts
from portal.services.administration import set_account_password
from portal.services.support import BREAK_GLASS_REASONS

from .conftest import PASSWORD, Console, request_id_from

MO = Path(__file__).resolve().parents[2] / "portal" / "translations" / "fr" / "LC_MESSAGES" / "messages.mo"
# Every action the product writes in the audit log but `member.created` (no route creates a
# person's account with an audit entry: people come from the host's sign-up or the command line).
ACTIONS = (
    "memories.viewed", "access.exported", "erasure.logged", "erasure.requested", "erasure.completed",
    "tenant.created", "tenant.ai_on", "tenant.ai_off", "staff.created", "admin.created", "api_key.created",
    "api_key.revoked", "sessions.ended", "staff.disabled", "staff.password_set", "account.password_set",
    "staff.removed", "person.paused", "person.resumed", "person.erased_all", "person.exported", "person.imported",
    "person.import_undone", "person.app_paused", "person.app_blocked", "person.app_resumed", "person.erased",
    "person.purged", "person.forgot_matching",
)
COUNT_KEYS = (*PurgeCounts().to_json(), "accounts", "added", "duplicates", "refused", "earlier_refused")
CODES = {*ACTIONS, *COUNT_KEYS, *BREAK_GLASS_REASONS, "open", "completed", "active", "archived", "paused", "blocked",
         "person", "staff", "member", "admin", "api_key", "operator", "True", "False", "None"}
ISO_DATE = re.compile(r"\b\d{4}-\d\d-\d\d\b")
SNAKE_OR_DOTTED = re.compile(r"(?<![\w@./-])[a-z]+(?:[._][a-z0-9]+)+(?![\w@/-])")
KEY_EQUALS = re.compile(r"\b[a-z_]+=\d")
EMAIL = re.compile(r"\S+@\S+")
SHOWN_ATTRIBUTES = ("aria-label", "placeholder", "alt", "hx-confirm", "data-label", "data-done", "data-failed", "title")


@dataclass
class Rendered:
    """What a person reads on a page: its text nodes (not a <code>, a <textarea> or a <script>),
    and the attributes a browser shows or speaks."""

    nodes: list[str] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)


class Reader(HTMLParser):
    SKIPPED = {"code", "textarea", "script", "style"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.seen = Rendered()
        self.skipping: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIPPED:
            self.skipping.append(tag)
        for name, value in attrs:
            if name in SHOWN_ATTRIBUTES and value and value.strip():
                self.seen.attributes.append(value.strip())

    def handle_endtag(self, tag: str) -> None:
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping and data.strip():
            self.seen.nodes.append(" ".join(data.split()))


def rendered(answer: TestResponse) -> Rendered:
    reader = Reader()
    reader.feed(answer.get_data(as_text=True))
    return reader.seen


def catalog_texts() -> tuple[set[str], set[str], list[tuple[str, re.Pattern[str] | None]]]:
    """The catalog's English texts, its French ones, and the English texts whose French differs:
    a pattern for a text of several words (its placeholders match anything), None for one word
    (matched as a whole text node)."""
    with MO.open("rb") as handle:
        catalog = read_mo(handle)
    english, french, left = set(), set(), []
    for message in catalog:
        ids = tuple(message.id) if isinstance(message.id, list | tuple) else (message.id,)
        strings = tuple(message.string) if isinstance(message.string, list | tuple) else (message.string,)
        english.update(i for i in ids if i)
        french.update(s for s in strings if s)
        for text in ids:
            if not text or text in strings:
                continue
            bare = re.sub(r"%\(\w+\)[sd]|\{\w+\}", "", text)
            if not re.search(r"[A-Za-z]{2}", bare):
                continue  # placeholders and punctuation only
            if len(text.split()) == 1:
                left.append((text, None))
                continue
            pattern = re.escape(text)
            pattern = re.sub(r"%\\\(\w+\\\)[sd]|\\\{\w+\\\}", ".+?", pattern)
            left.append((text, re.compile(rf"(?<!\w){pattern}(?!\w)")))
    return english, french, left


ENGLISH_WORDS, FRENCH_WORDS, ENGLISH = catalog_texts()


def untranslated(seen: Rendered) -> list[str]:
    found = []
    for text, pattern in ENGLISH:
        if pattern is None:
            if any(node.strip(" :·()") == text for node in seen.nodes) or text in seen.attributes:
                found.append(text)
        elif any(pattern.search(value) for value in (*seen.nodes, *seen.attributes)):
            found.append(text)
    return found


def raw_codes(seen: Rendered, english: bool) -> list[str]:
    """Codes and keys shown as they are kept. A code that is also a text of the catalog in the
    page's language ("paused" in English, "active" in French) reads as a word."""
    words = ENGLISH_WORDS if english else FRENCH_WORDS
    found = []
    for node in seen.nodes:
        plain = EMAIL.sub(" ", node)
        found += SNAKE_OR_DOTTED.findall(plain)
        found += KEY_EQUALS.findall(plain)
        piece = node.strip(" :·(),")
        if piece in CODES and piece not in words:
            found.append(piece)
    return found


def iso_dates(seen: Rendered) -> list[str]:
    return [value for value in (*seen.nodes, *seen.attributes) if ISO_DATE.search(value)]


@dataclass
class Page:
    who: str
    method: str
    url: str
    data: dict[str, object] | None = None
    headers: dict[str, str] | None = None
    status: int = 200


@dataclass
class World:
    console: Console
    apps: dict[str, str]  # app name: key
    requests: dict[str, str]  # "person", "staff", "done": erasure request id
    key_id: str
    memory_id: str
    staff_to_change: User


def api(console: Console, token: str, method: str, path: str, json: object = None) -> None:
    client = console.client()
    answer = client.open(f"/api/v1{path}", method=method, json=json, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code < 300, (path, answer.status_code, answer.get_data(as_text=True))


def every_state(console: Console) -> World:
    """Data in every state the pages show, and an audit entry of every action."""
    runtime, a1 = console.runtime, console.a1
    admin, staff, person = console.client(console.admin), console.client(console.sA), console.client(a1)
    memory = console.remember(a1.place, "Swims in the lido at dawn", kind="fact")
    assert person.post(f"/memories/{memory.id}", data={"text": "Swims in the lido at six", "revision": "1"}).status_code == 303
    assert person.post(f"/memories/{memory.id}/pin", data={"pinned": "1"}).status_code == 303
    console.remember(a1.place, "Might enjoy the cinema club", kind="preference", channel="background", origin="inferred")

    # Apps: allowed, paused and blocked; one key revoked.
    apps = {}
    for name in ("Lido bot", "Pause bot", "Block bot"):
        _key, apps[name] = runtime.administration.create_api_key(
            console.admin, console.a.id, ["memories:read", "memories:write", "memories:forget", "erasure"], name)
        api(console, apps[name], "POST", f"/people/{a1.owner_id}/memories", {"text": f"Talked to {name}"})
        api(console, apps[name], "POST", f"/people/{a1.owner_id}/recall", {"query": "lido"})
    app_ids = {app.name: app_id for app_id, app in apps_of(runtime.api_keys.list(console.a.id)).items()}
    for name, action in (("Pause bot", "pause"), ("Block bot", "block"), ("Lido bot", "block"), ("Lido bot", "resume")):
        assert person.post(f"/account/apps/{app_ids[name]}", data={"action": action}).status_code == 303
    revoked, _token = runtime.administration.create_api_key(console.admin, console.a.id, ["memories:read"], "Old bot")
    assert admin.post(f"/admin/keys/{revoked.id}/revoke", data={"confirmed": "1"}).status_code == 303

    # The person's own actions.
    for path in ("/account/pause", "/account/resume"):
        assert person.post(path).status_code == 303
    assert person.get("/account/export.json").status_code == 200
    imported = person.post("/account/import", data={"content": "SW5rcyB3YXRlcmNvbG91cnMK", "confirmed": "1"})
    assert imported.status_code == 303
    [batch] = console.audit(action="person.imported")
    assert batch.counts
    undo = re.search(r"/account/import/([^/\"]+)/undo", person.get("/memories").get_data(as_text=True))
    assert undo, "no Undo offered after the import"
    assert person.post(f"/account/import/{undo.group(1)}/undo").status_code == 303
    about = person.post("/memories/forget-about/preview", data={"subject": "cinema"}).get_data(as_text=True)
    token, ids = re.search(r'name="preview" value="([^"]+)"', about), re.findall(r'name="ids" value="([^"]+)"', about)
    assert token and ids, "forget everything about the cinema found nothing"
    assert person.post("/memories/forget-about", data={"preview": token.group(1), "ids": ids}).status_code == 303

    # Erasure requests: asked by a person, logged by staff, carried out.
    make = runtime.accounts.create
    cy = make("cy@a.example", "Cy Rowe", console.a.id, "member", PASSWORD)
    dee = make("dee@a.example", "Dee Marsh", console.a.id, "member", PASSWORD)
    eve = make("eve@a.example", "Eve Lark", console.a.id, "member", PASSWORD)
    fay = make("fay@a.example", "Fay Moss", console.a.id, "member", PASSWORD)
    for who in (cy, dee, eve, fay):
        console.remember(who.place, f"{who.name} keeps a diary")
    assert console.client(a1).post("/account/delete", data={"confirmed": "1"}).status_code == 303
    logged = staff.post(f"/staff/people/{console.a2.id}/erasure", data={"ticket": "ZD-7"})
    done = staff.post(f"/staff/people/{cy.id}/erasure", data={"ticket": "ZD-8"})
    assert staff.post(f"/staff/erasure/{request_id_from(done)}", data={"confirm": cy.email}).status_code == 303
    [asked] = runtime.support.erasures.open_for(a1.owner_id, a1.tenant_id)
    requests = {"person": asked.id, "staff": request_id_from(logged), "done": request_id_from(done)}
    assert console.client(dee).post("/account/erase", data={"confirm": dee.email}).status_code == 303
    api(console, apps["Lido bot"], "DELETE", f"/people/{eve.owner_id}")
    runtime.service.purge_owner(fay.owner_id, [console.a.id], audit=AuditNote(None, "operator", "person.purged"))
    with runtime.records.unit() as uow:  # what `memory-portal user set-password` does for a person
        set_account_password(uow, console.a2, "a brand new password", None, "operator")
        uow.commit()

    # Staff and admins.
    assert staff.post(f"/staff/people/{a1.id}/memories", data={"reason": "complaint", "ticket": "ZD-9"}).status_code == 200
    assert staff.post(f"/staff/people/{a1.id}/export", data={"ticket": "ZD-10"}).status_code == 200
    assert admin.post("/admin/tenants", data={"name": "Tenant C", "ai": "on"}).status_code == 303
    tenant_c = runtime.tenants.find("Tenant C")
    assert tenant_c is not None
    for enabled in ("0", "1"):
        assert admin.post(f"/admin/tenants/{tenant_c.id}/ai", data={"enabled": enabled}).status_code == 303
    for email, role in (("gus@a.example", "staff"), ("hal@a.example", "admin"), ("ivy@a.example", "staff")):
        assert admin.post("/admin/staff", data={"email": email, "name": email[:3].title(), "tenant": console.a.id,
                                                "role": role, "password": PASSWORD}).status_code == 303
    found = {u.email: u for u in runtime.accounts.find("a.example")}
    gus, ivy = found["gus@a.example"], found["ivy@a.example"]
    assert admin.post(f"/admin/staff/{gus.id}/disable", data={"confirmed": "1"}).status_code == 303
    assert admin.post(f"/admin/staff/{gus.id}/password", data={"password": "another good password"}).status_code == 303
    assert admin.post(f"/admin/staff/{gus.id}/remove", data={"confirmed": "1"}).status_code == 303
    assert admin.post(f"/admin/people/{console.a2.id}/end-sessions", data={"confirmed": "1"}).status_code == 303

    kept = {e.action for e in console.audit()}
    assert set(ACTIONS) <= kept, sorted(set(ACTIONS) - kept)
    return World(console, apps, requests, revoked.id, memory.id, ivy)


def pages(world: World) -> list[Page]:
    c, r = world.console, world.requests
    a1 = c.a1
    return [
        Page("anonymous", "GET", "/login"),
        Page("anonymous", "POST", "/login", {"email": a1.email, "password": "not the password"}, status=401),
        Page("a1", "GET", "/memories"),
        Page("a1", "GET", "/memories?kind=fact"),
        Page("a1", "GET", "/memories?q=lido"),
        Page("a1", "GET", "/memories?q=nothing+like+it"),
        Page("a1", "GET", f"/memories/{world.memory_id}/edit"),
        Page("a1", "GET", f"/memories/{world.memory_id}/history"),
        Page("a1", "POST", f"/memories/{world.memory_id}/forget"),  # asks first
        Page("a1", "GET", "/account/apps"),
        Page("a1", "GET", "/account/import"),
        Page("a1", "POST", "/account/import", {"content": "TG92ZXMgd2F0ZXJjb2xvdXJzCg=="}),  # the preview
        Page("a1", "GET", "/account/erase"),
        Page("a1", "POST", "/account/erase", {"confirm": "someone else"}, status=422),
        Page("a1", "GET", "/memories/no-such-memory/history", status=404),
        Page("a1", "GET", "/memories?q=%00", status=400),
        Page("a1", "POST", "/account/pause", headers={"Origin": "https://elsewhere.example"}, status=403),
        Page("a2", "GET", "/memories"),
        Page("a2", "POST", "/account/delete"),  # asks first
        Page("sA", "GET", "/staff/"),
        Page("sA", "GET", "/staff/?q=a.example"),
        Page("sA", "GET", "/staff/?q=nobody+at+all"),
        Page("sA", "GET", f"/staff/people/{a1.id}"),
        Page("sA", "POST", f"/staff/people/{a1.id}/memories", {"reason": "legal_obligation", "ticket": "ZD-11"}),
        Page("sA", "GET", "/staff/erasure"),
        Page("sA", "GET", f"/staff/erasure/{r['person']}"),
        Page("sA", "GET", f"/staff/erasure/{r['staff']}"),
        Page("sA", "GET", f"/staff/erasure/{r['done']}"),
        Page("sA", "POST", f"/staff/erasure/{r['staff']}", {"confirm": "not them"}, status=422),
        Page("sA", "GET", "/staff/audit"),
        Page("admin", "GET", "/staff/audit"),
        Page("admin", "GET", "/staff/audit?action=person"),
        Page("admin", "GET", f"/staff/people/{a1.id}"),
        Page("admin", "GET", "/admin/"),
        Page("admin", "POST", f"/admin/staff/{world.staff_to_change.id}/disable"),  # asks first
        Page("admin", "POST", f"/admin/people/{c.a2.id}/end-sessions"),  # asks first
    ]


@pytest.fixture
def world(console: Console) -> World:
    return every_state(console)


def render(world: World, page: Page, language: str) -> Rendered:
    c = world.console
    users = {"a1": c.a1, "a2": c.a2, "sA": c.sA, "admin": c.admin}
    headers = {"Accept-Language": language, **(page.headers or {})}
    client: FlaskClient
    if page.who == "anonymous":
        client = c.client()
    else:
        user = c.runtime.accounts.get(users[page.who].id)  # as it is now (a2's sessions were ended)
        assert user is not None
        c.runtime.people.set_language(user, language)
        client = c.client(c.runtime.accounts.get(user.id))
    answer = client.open(page.url, method=page.method, data=page.data, headers=headers)
    assert answer.status_code == page.status, (page, answer.status_code)
    return rendered(answer)


def test_every_page_reads_french_with_no_english_left_no_raw_code_and_no_iso_date(world: World) -> None:
    problems = []
    for page in pages(world):
        seen = render(world, page, "fr")
        for kind, found in (("English", untranslated(seen)), ("code", raw_codes(seen, english=False)),
                            ("ISO date", iso_dates(seen))):
            if found:
                problems.append(f"{page.who} {page.method} {page.url}: {kind}: {sorted(set(found))}")
    assert problems == [], "\n".join(problems)


def test_every_page_in_english_shows_labels_not_codes_or_keys(world: World) -> None:
    problems = []
    for page in pages(world):
        seen = render(world, page, "en")
        for kind, found in (("code", raw_codes(seen, english=True)), ("ISO date", iso_dates(seen))):
            if found:
                problems.append(f"{page.who} {page.method} {page.url}: {kind}: {sorted(set(found))}")
    assert problems == [], "\n".join(problems)


def test_what_the_issue_found_untranslated_reads_french(world: World) -> None:
    """The cases named in issue 27, each as a French reader now sees it."""
    c, r = world.console, world.requests
    person = render(world, Page("sA", "GET", f"/staff/people/{c.a1.id}"), "fr").nodes
    for reason in ("Demande d'accès", "Demande de rectification", "Réclamation", "Obligation légale"):
        assert reason in person  # the break-glass reasons, once "access request", "complaint"...
    apps = render_html(world, "sA", f"/staff/people/{c.a1.id}")
    states = dict(re.findall(r"<td[^>]*>(\w+ bot)</td><td[^>]*>([^<]+)</td>", apps))
    assert states == {"Lido bot": "autorisée", "Pause bot": "en pause", "Block bot": "bloquée"}  # not "oui"
    asked = " ".join(render(world, Page("sA", "GET", f"/staff/erasure/{r['person']}"), "fr").nodes)
    assert "Demandée par La personne, depuis le portail" in asked and "État Ouverte" in asked
    logged = " ".join(render(world, Page("sA", "GET", f"/staff/erasure/{r['staff']}"), "fr").nodes)
    assert "Demandée par Le support, pour la personne" in logged
    done = render(world, Page("sA", "GET", f"/staff/erasure/{r['done']}"), "fr").nodes
    assert "Effectuée" in done and "completed" not in done
    for label in ("Décisions sur les applications connectées", "Réponses gardées pour les applications",
                  "Références de conversations", "Traces de souvenirs oubliés"):
        assert label in done  # app_controls, receipts, refs, tombstones
    months = "janv.|févr.|mars|avr.|mai|juin|juil.|août|sept.|oct.|nov.|déc."
    assert any(re.fullmatch(rf"\d{{1,2}} ({months}) \d{{4}}", node) for node in done)  # "2 déc. 2026"


def render_html(world: World, who: str, url: str) -> str:
    user = {"sA": world.console.sA, "admin": world.console.admin}[who]
    world.console.runtime.people.set_language(user, "fr")
    return world.console.client(world.console.runtime.accounts.get(user.id)).get(url).get_data(as_text=True)
