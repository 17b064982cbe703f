"""Finding a person and what staff see of them: counts by kind, paused state and last activity,
never the memory text, unless they open it with a recorded reason (break glass). An access
request exports everything kept, as a JSON download, and leaves an audit entry."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from babel.dates import format_date, format_time

from .conftest import A1_MEMORIES, A1_WORDS, B1_TEXT, PASSWORD, Console, bare_cells, main_html, page_text


def found_emails(console: Console, query: str, staff: str = "sA") -> list[str]:
    answer = console.client(getattr(console, staff)).get("/staff/", query_string={"q": query})
    assert answer.status_code == 200
    return re.findall(r'<tr data-testid="person"><td><a href="[^"]+">([^<]+)</a>', bare_cells(answer.get_data(as_text=True)))


def test_the_search_field_is_labelled_find_a_person(console: Console) -> None:
    html = console.client(console.sA).get("/staff/").get_data(as_text=True)
    assert re.search(r'<label for="q">Find a person</label>\s*<input id="q" name="q" type="search"', html)


def test_find_a_person_by_email_name_or_owner_id(console: Console) -> None:
    assert found_emails(console, "ada@a.example") == ["ada@a.example"]
    assert found_emails(console, "ADA@A.EXAMPLE") == ["ada@a.example"]
    assert found_emails(console, "alan") == ["alan@a.example"]
    assert found_emails(console, "quill") == ["ada@a.example"]  # name, any case
    assert found_emails(console, "Alan Brook") == ["alan@a.example"]
    assert found_emails(console, "ext-a1-owner") == ["ada@a.example"]  # the assistant backend's id
    assert found_emails(console, console.a2.owner_id) == ["alan@a.example"]  # default owner id: the account's id
    assert found_emails(console, "nobody-here") == []
    answer = console.client(console.sA).get("/staff/?q=nobody-here")
    assert "Nobody matches." in page_text(answer)


def test_find_is_limited_to_the_staff_members_tenant(console: Console) -> None:
    assert found_emails(console, "example") == ["ada@a.example", "alan@a.example"]  # people of A only
    assert found_emails(console, "bea@b.example") == []
    assert found_emails(console, "Bea Stone") == []
    assert found_emails(console, console.b1.owner_id) == []
    assert found_emails(console, "example", staff="sB") == ["bea@b.example"]
    everyone = found_emails(console, "example", staff="admin")
    assert {"ada@a.example", "bea@b.example", "sid@b.example", "root@a.example"} <= set(everyone)


def test_the_person_page_shows_counts_pause_and_activity_but_no_memory_text(console: Console) -> None:
    console.runtime.service.pause(console.a1.place)
    client = console.client(console.sA)
    answer = client.get(f"/staff/people/{console.a1.id}")
    assert answer.status_code == 200
    text, html = page_text(answer), answer.get_data(as_text=True)
    assert "Ada Quill" in text and "ada@a.example" in text and "ext-a1-owner" in text
    assert re.search(r'data-testid="total">3<', html)
    for label in ("Fact 1", "Goal 1", "Preference 1"):
        assert label in text
    assert "Learning paused" in text
    last = console.runtime.service.list(console.a1.place, limit=10).items[0].updated_at
    assert f"Last activity {minute(last)}" in text
    for word in A1_WORDS:
        assert word not in html.lower()
    console.runtime.service.resume(console.a1.place)
    assert "Learning on" in page_text(client.get(f"/staff/people/{console.a1.id}"))


def test_a_person_with_nothing_kept(console: Console) -> None:
    fresh = console.runtime.accounts.create("cleo@a.example", "Cleo Fresh", console.a.id, "member", "x" * 12)
    text = page_text(console.client(console.sA).get(f"/staff/people/{fresh.id}"))
    assert "Memories 0" in text and "Last activity none" in text


def test_signing_in_is_the_last_activity_staff_see(console: Console) -> None:
    fresh = console.runtime.accounts.create("cleo@a.example", "Cleo Fresh", console.a.id, "member", PASSWORD)
    before = datetime.now(UTC).replace(second=0, microsecond=0)
    console.client(fresh, through_form=True)
    seen = console.runtime.accounts.get(fresh.id)
    assert seen is not None and seen.last_visit_at is not None and seen.last_visit_at >= before
    text = page_text(console.client(console.sA).get(f"/staff/people/{fresh.id}"))
    assert "Memories 0" in text and f"Last activity {minute(seen.last_visit_at)}" in text
    # A wrong password is no visit.
    console.app().test_client().post("/login", data={"email": fresh.email, "password": "wrong password!"})
    assert console.runtime.accounts.get(fresh.id) == seen


def test_break_glass_without_a_reason_is_refused_and_shows_no_text(console: Console) -> None:
    client = console.client(console.sA)
    for reason in ("", "curiosity"):
        answer = client.post(f"/staff/people/{console.a1.id}/memories", data={"reason": reason, "ticket": "T-9"})
        assert answer.status_code == 303
        assert answer.headers["Location"] == f"/staff/people/{console.a1.id}"
        assert not any(word in answer.get_data(as_text=True) for word in A1_WORDS)
        shown = client.get(answer.headers["Location"])
        assert "Choose why you need to see the memories." in page_text(shown)
        assert not any(word in shown.get_data(as_text=True) for word in A1_WORDS)
    assert console.audit(action="memories.viewed") == []


def test_break_glass_with_a_reason_shows_the_text_and_is_audited(console: Console) -> None:
    client = console.client(console.sA)
    answer = client.post(f"/staff/people/{console.a1.id}/memories", data={"reason": "complaint", "ticket": "ZD-4711"})
    assert answer.status_code == 200
    text = page_text(answer)
    for memory, _kind in A1_MEMORIES:
        assert memory in text
    assert "in the audit log" in text
    assert "Plays chess by mail" not in text and B1_TEXT not in text  # a1's only
    [entry] = console.audit(action="memories.viewed")
    assert (entry.actor_id, entry.actor_role, entry.subject_owner_id, entry.scope) == (
        console.sA.id, "staff", "ext-a1-owner", console.a.id)
    assert (entry.reason_code, entry.ticket, entry.counts) == ("complaint", "ZD-4711", {"memories": 3})
    logged = main_html(client.get("/staff/audit"))
    assert "Opened the memories</a> (Complaint)" in logged and "ZD-4711" in logged


def test_memory_text_is_escaped_in_the_break_glass_view(console: Console) -> None:
    console.remember(console.a1.place, "<script>alert(1)</script> likes tags", kind="fact")
    html = console.client(console.sA).post(f"/staff/people/{console.a1.id}/memories",
                                           data={"reason": "access_request"}).get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; likes tags" in html


def test_an_invalid_ticket_is_refused_before_anything_is_shown(console: Console) -> None:
    client = console.client(console.sA)
    answer = client.post(f"/staff/people/{console.a1.id}/memories", data={"reason": "complaint", "ticket": "a b@c"})
    assert answer.status_code == 303
    assert "A ticket reference is letters, digits" in page_text(client.get(answer.headers["Location"]))
    assert console.audit(action="memories.viewed") == []


def test_export_for_an_access_request_is_a_json_download_and_audited(console: Console) -> None:
    console.runtime.service.update(console.a1.place, console.runtime.service.list(console.a1.place).items[0].id,
                                   text="Wants to learn the bassoon and the oboe")
    answer = console.client(console.sA).post(f"/staff/people/{console.a1.id}/export", data={"ticket": "REQ-15"})
    assert answer.status_code == 200
    assert answer.mimetype == "application/json"
    assert answer.headers["Content-Disposition"].startswith("attachment;")
    data = json.loads(answer.get_data(as_text=True))
    texts = {m["text"] for m in data["memories"]}
    assert texts == {"Keeps an axolotl in the kitchen", "Loves marzipan on Sundays", "Wants to learn the bassoon and the oboe"}
    assert data["account"]["email"] == "ada@a.example" and data["account"]["name"] == "Ada Quill"
    # the very document a person downloads themselves (portal.domain.export)
    assert (data["format"], data["version"]) == ("memory-portal/export", 1)
    assert set(data) == {"format", "version", "exported_at", "account", "owner_id", "scope", "settings", "memories", "apps",
                         "jobs", "conversations"}
    [edited] = [m for m in data["memories"] if m["text"].endswith("oboe")]
    assert [r["text"] for r in edited["revisions"]] == ["Wants to learn the bassoon"]  # earlier wording too
    [entry] = console.audit(action="access.exported")
    assert (entry.actor_id, entry.subject_owner_id, entry.scope, entry.ticket, entry.counts) == (
        console.sA.id, "ext-a1-owner", console.a.id, "REQ-15", {"memories": 3})


def test_the_person_page_shows_each_connected_apps_counts_and_state_but_no_text(console: Console) -> None:
    from portal.domain.apps import app_of

    key, _token = console.runtime.api_keys.create(console.a.id, ("memories:read",), name="Support bot")
    bot = app_of(key)
    view = console.runtime.service.for_app(bot)
    listed = view.list(console.a1.place).items
    view.recall(console.a1.place, listed[0].text)
    console.runtime.service.set_app_control(console.a1.place, bot.id, "paused")
    answer = console.client(console.sA).get(f"/staff/people/{console.a1.id}")
    html = answer.get_data(as_text=True)
    table = html[html.index('data-testid="staff-apps"'):html.index("</table>", html.index('data-testid="staff-apps"'))]
    assert "Support bot" in table and "paused" in table
    cells = re.findall(r"<td>([^<]*)</td>", bare_cells(table))
    # memories used; remembered, recalled, corrected, forgot, read; conversations kept temporary
    assert cells[3:] == ["3", "0", "1", "0", "0", "3", "0"]
    view.consolidate(console.a1.place, "User: nothing to keep", "conv-1", temporary=True)
    console.runtime.service.set_app_control(console.a1.place, bot.id, None)
    view.consolidate(console.a1.place, "User: nothing to keep", "conv-1", temporary=True)
    html = console.client(console.sA).get(f"/staff/people/{console.a1.id}").get_data(as_text=True)
    table = html[html.index('data-testid="staff-apps"'):html.index("</table>", html.index('data-testid="staff-apps"'))]
    assert re.findall(r"<td>([^<]*)</td>", bare_cells(table))[-1] == "1"  # counted once: paused, it was refused
    for word in A1_WORDS:
        assert word not in html.lower()


def minute(moment: datetime) -> str:
    """A time as an English page shows it, to the minute ("Dec 2, 2026, 2:05 PM"), spaces as page_text leaves them."""
    return " ".join(f"{format_date(moment, 'medium', locale='en')}, {format_time(moment, 'short', locale='en')}".split())
