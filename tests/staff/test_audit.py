"""The audit log: every staff and admin action, and each person's erase-all, export and pause,
leaves an entry; the log filters by actor, subject, action and date and downloads as CSV; and no
entry anywhere holds a memory's words, an e-mail address or a name."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from html import unescape

from flask.testing import FlaskClient
from sqlalchemy import select

from portal.adapters.sql.tables import audit_log
from portal.domain.apps import app_of
from portal.domain.audit import AuditNote

from .conftest import A1_WORDS, B1_TEXT, PASSWORD, Console, bare_cells, main_html, page_text, request_id_from

PERSON_ACTIONS = ("person.paused", "person.resumed", "person.exported", "person.erased_all", "erasure.requested")
STAFF_ACTIONS = ("memories.viewed", "access.exported", "erasure.logged", "erasure.completed")
ADMIN_ACTIONS = ("tenant.created", "tenant.ai_off", "tenant.ai_on", "staff.created", "api_key.created", "api_key.revoked")


def do_everything(console: Console) -> None:
    """Every audited action, through the pages, as people, staff and an admin do them."""
    person = console.client(console.a2)
    assert person.post("/account/pause").status_code == 303
    assert person.post("/account/resume").status_code == 303
    assert person.get("/account/export.json").status_code == 200
    assert person.get("/account/export.csv").status_code == 200
    assert person.post("/account/erase", data={"confirm": console.a2.email}).status_code == 303
    assert console.client(console.a1).post("/account/delete", data={"confirmed": "1"}).status_code == 303

    staff = console.client(console.sA)
    opened = staff.post(f"/staff/people/{console.a1.id}/memories", data={"reason": "access_request", "ticket": "T-1"})
    assert opened.status_code == 200
    assert staff.post(f"/staff/people/{console.a1.id}/export", data={"ticket": "T-2"}).status_code == 200
    request_id = request_id_from(staff.post(f"/staff/people/{console.a1.id}/erasure", data={"ticket": "T-3"}))
    assert staff.post(f"/staff/erasure/{request_id}", data={"confirm": console.a1.email}).status_code == 303

    admin = console.client(console.admin)
    assert admin.post("/admin/tenants", data={"name": "Tenant C", "ai": "on"}).status_code == 303
    assert admin.post(f"/admin/tenants/{console.b.id}/ai", data={"enabled": "0"}).status_code == 303
    assert admin.post(f"/admin/tenants/{console.b.id}/ai", data={"enabled": "1"}).status_code == 303
    assert admin.post("/admin/staff", data={"email": "nina@b.example", "name": "Nina New", "tenant": console.b.id,
                                            "role": "staff", "password": PASSWORD}).status_code == 303
    assert admin.post("/admin/keys", data={"tenant": console.b.id, "permission": ["erasure"]}).status_code == 303
    key = console.runtime.api_keys.list()[0]
    assert admin.post(f"/admin/keys/{key.id}/revoke", data={"confirmed": "1"}).status_code == 303


def shown_entries(client: FlaskClient, **filters: str) -> list[str]:
    """The action column of the audit page, top to bottom."""
    html = bare_cells(main_html(client.get("/staff/audit", query_string=filters)))
    # the action is said in words; its code is the link's tooltip
    return re.findall(r'<tr data-testid="audit-entry"><td>.*?</td><td>.*?</td>\s*<td><a href="[^"]*" title="([a-z_.]+)"',
                      html, flags=re.S)


def test_every_action_leaves_an_entry(console: Console) -> None:
    do_everything(console)
    actions = [e.action for e in console.audit()]
    for action in PERSON_ACTIONS + STAFF_ACTIONS + ADMIN_ACTIONS:
        assert action in actions, action
    assert actions.count("person.exported") == 2  # JSON and CSV
    by_action = {e.action: e for e in console.audit()}
    assert by_action["person.erased_all"].counts == {"memories": 1, "revisions": 0, "receipts": 0, "refs": 0}
    assert by_action["person.erased_all"].actor_id == console.a2.id
    assert by_action["erasure.completed"].counts and by_action["erasure.completed"].counts["memories"] == 3


def test_no_entry_holds_words_emails_or_names(console: Console) -> None:
    do_everything(console)
    forbidden = [*A1_WORDS, "chess", "zeppelin", "@", "ada quill", "alan brook", "bea stone", "sam helper",
                 "ana admin", "nina new", "tenant c"]
    with console.runtime.engine.connect() as conn:
        rows = [" ".join(str(v) for v in row).lower() for row in conn.execute(select(audit_log))]
    assert len(rows) >= 16
    for row in rows:
        assert not [w for w in forbidden if w in row], row
    admin = console.client(console.admin)
    page = main_html(admin.get("/staff/audit")).lower()
    exported = admin.get("/staff/audit.csv").get_data(as_text=True).lower()
    for word in [*A1_WORDS, "chess", "zeppelin", "@", "ada quill", "alan brook", "bea stone", "nina new"]:
        assert word not in page and word not in exported, word


def test_filters_by_actor_subject_action_and_date(console: Console) -> None:
    do_everything(console)
    admin = console.client(console.admin)
    everything = shown_entries(admin)
    assert len(everything) == len(console.audit())
    assert set(shown_entries(admin, actor=console.sA.id)) == set(STAFF_ACTIONS)
    assert set(shown_entries(admin, subject="ext-a1-owner")) == set(STAFF_ACTIONS) | {"erasure.requested"}
    assert shown_entries(admin, action="erasure.logged") == ["erasure.logged"]
    assert shown_entries(admin, action="memories.viewed", actor=console.sA.id) == ["memories.viewed"]
    assert shown_entries(admin, action="memories.viewed", actor=console.admin.id) == []
    today = datetime.now(UTC).date()
    day = timedelta(days=1)
    assert shown_entries(admin, **{"from": str(today), "to": str(today)}) == everything
    assert shown_entries(admin, **{"from": str(today + day)}) == []
    assert shown_entries(admin, to=str(today - day)) == []
    assert "No entries." in page_text(admin.get("/staff/audit", query_string={"action": "nothing.done"}))
    form = main_html(admin.get("/staff/audit", query_string={"action": "erasure.logged"}))
    assert 'name="action" value="erasure.logged"' in form  # the filter stays filled in
    # a family finds every action of it
    # the erasure family: the requests and their completion, and a person's own erase-all
    assert set(shown_entries(admin, action="erasure")) == {"erasure.completed", "erasure.logged", "erasure.requested",
                                                           "person.erased_all"}
    assert set(shown_entries(admin, action="api_key")) == {"api_key.created", "api_key.revoked"}


def test_the_log_names_staff_shows_whole_short_ids_and_keys_in_their_column(console: Console) -> None:
    do_everything(console)
    console.runtime.records.audit.record(console.sA.id, "staff", "memories.viewed", "ada", console.a.id)
    html = main_html(console.client(console.admin).get("/staff/audit"))
    rows = re.findall(r'<tr data-testid="audit-entry">(.*?)</tr>', html, flags=re.S)
    viewed = next(r for r in rows if "memories.viewed" in r)
    assert console.sA.name in viewed and f'title="{console.sA.id}"' in viewed  # a name, the id on hover
    person_row = next(r for r in rows if "person.paused" in r)
    assert console.a2.name not in person_row  # a person acting on their own memories stays an id
    created = next(r for r in rows if "api_key.created" in r)
    [key] = [e for e in console.audit(action="api_key.created")]
    cells = re.findall(r"<td>(.*?)</td>", bare_cells(created), flags=re.S)
    assert key.ticket in cells[3] and key.ticket not in cells[6]  # under Subject as the key, not as a ticket
    assert '<code title="ada">ada</code>' in html  # a short id whole, with no "…"
    assert f'<code title="{console.a.id}">{console.a.id[:8]}…</code>' in html  # a long one cut


def test_staff_see_their_own_tenants_entries_only(console: Console) -> None:
    do_everything(console)
    staff_b = console.client(console.sB)
    shown = shown_entries(staff_b)
    assert "memories.viewed" not in shown and "person.paused" not in shown  # tenant A's
    assert {"tenant.ai_off", "tenant.ai_on", "staff.created", "api_key.created"} <= set(shown)  # B's own
    assert console.a1.owner_id not in main_html(staff_b.get("/staff/audit"))


def test_the_csv_download_has_the_header_and_the_filtered_rows(console: Console) -> None:
    do_everything(console)
    admin = console.client(console.admin)
    answer = admin.get("/staff/audit.csv", query_string={"actor": console.sA.id})
    assert answer.status_code == 200 and answer.mimetype == "text/csv"
    assert answer.headers["Content-Disposition"] == 'attachment; filename="audit.csv"'
    rows = list(csv.reader(io.StringIO(answer.get_data(as_text=True))))
    assert rows[0] == ["at", "actor_id", "actor_role", "action", "subject_owner_id", "scope", "counts", "ticket", "reason"]
    body = rows[1:]
    assert {r[3] for r in body} == set(STAFF_ACTIONS) and {r[1] for r in body} == {console.sA.id}
    viewed = next(r for r in body if r[3] == "memories.viewed")
    assert viewed[4:] == ["ext-a1-owner", console.a.id, '{"memories": 3}', "T-1", "access_request"]
    assert datetime.fromisoformat(viewed[0]).date() == datetime.now(UTC).date()
    # The page's download link carries the same filters.
    html = main_html(admin.get("/staff/audit", query_string={"actor": console.sA.id, "action": "erasure.logged"}))
    link = re.search(r'href="([^"]*audit\.csv[^"]*)"', html)
    assert link and link.group(1).replace("&amp;", "&") == f"/staff/audit.csv?actor={console.sA.id}&action=erasure.logged"


def test_only_filter_fields_reach_the_download_link(console: Console) -> None:
    """url_for reads `_external`, `_anchor`, `_scheme` as instructions: query arguments must not reach it."""
    client = console.client(console.sA)
    for query in ("_external=1&_anchor=x&action=a", "_scheme=javascript&_external=1", "_method=POST&actor=z"):
        answer = client.get(f"/staff/audit?{query}")
        assert answer.status_code == 200, query
        link = re.search(r'href="([^"]*audit\.csv[^"]*)"', answer.get_data(as_text=True))
        assert link and link.group(1).startswith("/staff/audit.csv") and "#" not in link.group(1), (query, link)
        assert "_" not in link.group(1).split("?", 1)[-1].split("=")[0], link.group(1)


def test_break_glass_text_and_person_pages_leave_no_words_in_the_log(console: Console) -> None:
    staff = console.client(console.sA)
    staff.get(f"/staff/people/{console.a1.id}")
    staff.post(f"/staff/people/{console.a1.id}/memories", data={"reason": "legal_obligation"})
    staff.get("/staff/?q=Ada Quill")
    log = main_html(staff.get("/staff/audit"))
    assert not any(w in log for w in (*A1_WORDS, B1_TEXT, "Ada Quill", "ada@a.example"))


def test_filters_by_the_words_shown_and_people_by_email_or_name(console: Console) -> None:
    """Issue 38, item 14: the log is read in words ("Erased everything", "Sam Helper") and was
    filtered by codes and ids only. The action field now takes the words an entry shows (in the
    page's language, or English), a person field an e-mail or a name too (of the people the staff
    member may see), and the form offers the words, not the codes."""
    do_everything(console)
    admin = console.client(console.admin)
    assert shown_entries(admin, action="Erased everything") == ["person.erased_all"]
    assert shown_entries(admin, action="  logged an ERASURE request ") == ["erasure.logged"]
    assert set(shown_entries(admin, action="erasure")) == {"erasure.completed", "erasure.logged", "erasure.requested",
                                                           "person.erased_all"}  # a family, as before
    assert set(shown_entries(admin, action="API key")) == {"api_key.created", "api_key.revoked"}
    assert shown_entries(admin, action="no such words") == []
    assert set(shown_entries(admin, actor=console.sA.email.upper())) == set(STAFF_ACTIONS)
    assert set(shown_entries(admin, actor="sam helper")) == set(STAFF_ACTIONS)
    alan = {"person.paused", "person.resumed", "person.exported", "person.erased_all"}
    assert set(shown_entries(admin, subject=console.a2.email)) == alan
    assert set(shown_entries(admin, subject="Alan Brook")) == alan
    assert set(shown_entries(admin, actor="Alan Brook")) == alan
    assert shown_entries(admin, actor="nobody@nowhere.example") == []
    assert shown_entries(admin, subject=console.a2.owner_id) != []  # ids still work
    # Staff of another tenant find nobody of tenant A by e-mail or name.
    assert shown_entries(console.client(console.sB), subject=console.a2.email) == []
    assert shown_entries(console.client(console.sB), actor="Sam Helper") == []
    form = main_html(admin.get("/staff/audit"))
    assert '<option value="Erased everything">' in form and '<option value="person.erased_all">' not in form
    assert 'id="f-actor"' in form and "Actor (e-mail, name or id)" in page_text(admin.get("/staff/audit"))
    # In French, the French words.
    console.runtime.accounts.set_language(console.admin.id, "fr")
    french = console.client(console.admin)
    assert shown_entries(french, action="a tout effacé") == ["person.erased_all"]
    assert '<option value="A tout effacé">' in main_html(french.get("/staff/audit"))


def test_a_from_date_after_the_to_date_is_said(console: Console) -> None:
    do_everything(console)
    admin = console.client(console.admin)
    today = datetime.now(UTC).date()
    answer = admin.get("/staff/audit", query_string={"from": str(today), "to": str(today - timedelta(days=3))})
    assert answer.status_code == 200
    said = page_text(answer)
    assert "The From date is after the To date: no entry can match. Swap them, or clear one." in said
    assert 'role="alert"' in main_html(answer) and "No entries." not in said
    assert 'aria-invalid="true"' in main_html(answer)


def test_the_reason_of_a_decision_about_apps_is_said_in_words(console: Console) -> None:
    """"Changed which apps may use a memory (*)": the star was the code for every app."""
    key, _token = console.runtime.api_keys.create(console.a.id, ("memories:read",), name="Support bot")
    memory = console.remember(console.a2.place, "Likes tea")
    note = lambda: AuditNote(console.a2.id, "member", "memory.use_changed")  # noqa: E731
    console.runtime.service.set_use(console.a2.place, memory.id, False, None, audit=note())
    console.runtime.service.set_use(console.a2.place, memory.id, True, None, audit=note())
    console.runtime.service.set_use(console.a2.place, memory.id, False, app_of(key).id, audit=note())
    html = main_html(console.client(console.admin).get("/staff/audit", query_string={"action": "memory"}))
    rows = re.findall(r'<tr data-testid="audit-entry">(.*?)</tr>', html, flags=re.S)
    said = [" ".join(unescape(re.sub(r"<[^>]+>", " ", re.sub(r"</?span[^>]*>", "", r))).split()) for r in rows]
    assert f'<span title="{app_of(key).id}">Support bot</span>' in html  # its id on hover
    assert any("(for every app)" in r for r in said), said
    assert any("(for Support bot)" in r for r in said), said
    assert not [r for r in said if "(*)" in r]
