"""Erasure requests: logged with a ticket and the date received, listed with their age and due date
(highlighted near the one-month deadline), confirmed by typing the person's e-mail or owner id,
then carried out in the person's tenant (never on another tenant's namesake), in one transaction
with its audit entries, leaving only the content-free audit trail and the request itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from babel.dates import format_date, format_datetime
from sqlalchemy import func, inspect, select, text
from sqlalchemy.engine import Engine

from portal.adapters.sql.janitor import settle_all
from portal.adapters.sql.tables import OWNER_TABLES, audit_log, erasure_requests, metadata
from portal.domain.apps import App
from portal.domain.types import Place, Receipt, Source

from ..security.scans import FERNET_TOKEN
from .conftest import A1_WORDS, Console, build_console, open_console, page_text, request_id_from


def log(console: Console, person: str = "a1", ticket: str = "ZD-100", days_ago: int = 0) -> str:
    received = (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y-%m-%d")
    answer = console.client(console.sA).post(f"/staff/people/{getattr(console, person).id}/erasure",
                                              data={"ticket": ticket, "received": received})
    assert answer.status_code == 303
    return request_id_from(answer)


def test_logging_a_request_lists_it_open_with_age_due_date_and_deadline_warning(console: Console) -> None:
    client = console.client(console.sA)
    received = datetime.now(UTC) - timedelta(days=25)
    answer = client.post(f"/staff/people/{console.a1.id}/erasure",
                         data={"ticket": "ZD-100", "received": received.strftime("%Y-%m-%d")})
    assert answer.status_code == 303
    request_id = request_id_from(answer)
    shown = client.get(answer.headers["Location"])
    text = page_text(shown)
    assert "Erasure request logged." in text
    assert "Ticket ZD-100" in text and f"Received {format_date(received, 'medium', locale='en')}" in text
    assert "State Open" in text
    recent = log(console, "a2", "ZD-101")

    listing = client.get("/staff/erasure").get_data(as_text=True)
    rows = {body: css for css, body in re.findall(r'<tr data-testid="erasure-request" class="([^"]*)">(.*?)</tr>',
                                                  listing, flags=re.S)}
    assert len(rows) == 2
    old_row = next(r for r in rows if request_id in r)
    new_row = next(r for r in rows if recent in r)
    assert rows[old_row] == "near-deadline" and rows[new_row] == ""
    due = format_date(received.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=30), "medium",
                      locale="en")
    assert "ZD-100" in old_row and ">Open</td>" in old_row and "25 days" in old_row
    assert due in old_row and "due soon" in old_row
    assert ">Open</td>" in new_row and "0 days" in new_row and "due soon" not in new_row
    [entry] = [e for e in console.audit(action="erasure.logged") if e.ticket == "ZD-100"]
    assert (entry.actor_id, entry.subject_owner_id, entry.scope) == (console.sA.id, "ext-a1-owner", console.a.id)


@pytest.mark.parametrize("received, message", [
    ((datetime.now(UTC) + timedelta(days=3)).strftime("%Y-%m-%d"), "The date received cannot be in the future."),
    ("2026-01-01", None),
])
def test_the_date_received_cannot_be_in_the_future(console: Console, received: str, message: str | None) -> None:
    client = console.client(console.sA)
    answer = client.post(f"/staff/people/{console.a1.id}/erasure", data={"ticket": "ZD-1", "received": received})
    assert answer.status_code == 303
    opened = console.runtime.support.requests(console.sA)
    if message:
        assert answer.headers["Location"] == f"/staff/people/{console.a1.id}"
        assert message in page_text(client.get(answer.headers["Location"]))
        assert opened == []
    else:
        assert [v.request.received_at.strftime("%Y-%m-%d") for v in opened] == [received]


def test_a_wrong_confirmation_erases_nothing(console: Console) -> None:
    request_id = log(console)
    client = console.client(console.sA)
    before = console.state()
    for typed in ("", "ada@a.example.org", "Ada Quill", console.a2.email, console.a1.id, "bea@b.example"):
        answer = client.post(f"/staff/erasure/{request_id}", data={"confirm": typed})
        assert answer.status_code == 422, typed
        assert "That is not the person's e-mail or owner id: nothing was erased." in page_text(answer)
    assert console.state() == before
    assert console.audit(action="erasure.completed") == []


@pytest.mark.parametrize("typed", ["  ADA@a.example ", "ext-a1-owner"])
def test_the_right_confirmation_erases_and_shows_counts_and_time(console: Console, typed: str) -> None:
    request_id = log(console)
    client = console.client(console.sA)
    started = datetime.now(UTC).replace(microsecond=0)
    answer = client.post(f"/staff/erasure/{request_id}", data={"confirm": typed})
    assert answer.status_code == 303 and answer.headers["Location"] == f"/staff/erasure/{request_id}"
    shown = client.get(answer.headers["Location"])
    text, html = page_text(shown), shown.get_data(as_text=True)
    assert "Erased: everything kept about this person in their organisation, and their account." in text
    assert "State Done" in text
    assert 'data-testid="count-memories">3<' in html and 'data-testid="count-accounts">1<' in html
    completed = re.search(r'<dt>Completed</dt><dd><time datetime="([^"]+)">([^<]+)</time> UTC', html)
    assert completed and datetime.fromisoformat(completed.group(1)) >= started
    assert completed.group(2) == format_datetime(datetime.fromisoformat(completed.group(1)), "medium", locale="en",
                                                 tzinfo=UTC)
    assert "Erase all data" not in text  # nothing left to confirm
    assert console.runtime.accounts.get(console.a1.id) is None
    assert console.texts(console.a1) == []
    assert console.texts(console.a2) == ["Plays chess by mail"]  # only a1
    again = client.post(f"/staff/erasure/{request_id}", data={"confirm": typed})
    assert again.status_code == 422 and "already completed" in page_text(again)
    listing = page_text(client.get("/staff/erasure"))
    assert "Done" in listing and "due soon" not in listing
    completed_entry = console.audit(action="erasure.completed")
    assert [e.ticket for e in completed_entry] == ["ZD-100"]  # one entry, written with the erasure itself
    assert completed_entry[0].counts is not None and completed_entry[0].counts["memories"] == 3
    # The person can no longer sign in, and their old session is gone with their account.
    assert console.client(console.a1).get("/memories").status_code == 302


def test_asking_to_delete_my_account_from_the_portal(console: Console) -> None:
    person = console.client(console.a1)
    answer = person.post("/account/delete", data={"confirmed": "1"})
    assert answer.status_code == 303
    assert "Support will complete it within a month" in page_text(person.get(answer.headers["Location"]))
    assert person.post("/account/delete", data={"confirmed": "1"}).status_code == 303  # asking twice makes one request
    [view] = console.runtime.support.requests(console.sA)
    assert (view.request.requested_by, view.request.state, view.request.ticket) == ("person", "open", None)
    assert view.request.subject_owner_id == "ext-a1-owner"
    [entry] = console.audit(action="erasure.requested")
    assert (entry.actor_id, entry.actor_role, entry.subject_owner_id, entry.scope) == (
        console.a1.id, "member", "ext-a1-owner", console.a.id)
    staff = console.client(console.sA)
    assert "The person, from the portal" in page_text(staff.get("/staff/erasure"))
    assert "An erasure request is open for this person." in page_text(staff.get(f"/staff/people/{console.a1.id}"))
    assert console.runtime.support.requests(console.sB) == []  # not tenant B's business


# ---------------------------------------------------------------------------- completeness

EXTRA_WORDS = ("kazoo", "reykjavik", "quokka", "tapioca", "capybara")
# Tenant B's own person who happens to have a1's owner id (owner ids are per tenant, DESIGN §2).
NAMESAKE_WORDS = ("pangolin",)


def give_a1_everything(console: Console) -> Place:
    """a1's data of every sort the store keeps, plus the portal's own traces; and tenant B's
    namesake (the same owner id, another person) with data of their own. Answers the namesake's place."""
    service, a1 = console.runtime.service, console.a1
    namesake = Place(a1.owner_id, console.b.id)
    console.remember(namesake, "Dreams of a pangolin sanctuary", kind="goal")
    first = service.list(a1.place, limit=10).items[-1]
    service.update(a1.place, first.id, text="Keeps two axolotl friends in the kitchen")  # a revision
    kazoo = console.remember(a1.place, "Hides a kazoo collection", kind="fact")
    service.forget(a1.place, kazoo.id)  # a tombstone
    console.remember(a1.place, "Mentioned a trip to Reykjavik", kind="event", origin="inferred",
                     channel="background", sources=(Source("consolidation", "conv-quokka-1"),))  # unseen
    now = datetime.now(UTC)
    for place in (a1.place, namesake):
        with service.store.write(place) as tx:
            tx.claim_ref("conv-quokka-1", now)
            tx.put_receipt(Receipt("idem-tapioca", "f" * 64, 201, {"memory": {"id": first.id, "text": None}},
                                   (first.id,), now))
            tx.commit()
        # a job, queued (before the pause: a paused person's conversation is not kept)
        service.consolidate_later(place, "I keep a capybara called Waffle", "conv-quokka-2")
        service.pause(place)
        bot = App("app-quokka", "Quokka bot")
        used = first.id if place == a1.place else service.list(namesake, limit=1).items[0].id
        service.for_app(bot, conversation_ref="conv-quokka-3").get(place, used)  # an app's use, in a conversation
        service.set_app_control(place, bot.id, "blocked")  # and what the person decided about it
    portal = console.client(console.a1)  # the person's own audited actions
    assert portal.get("/account/export.json").status_code == 200
    assert portal.post("/account/resume").status_code == 303
    assert portal.post("/account/pause").status_code == 303
    return namesake


def rows_of(engine: Engine, decrypt: Callable[[str], str] | None = None) -> dict[str, list[str]]:
    """Every row of every table (SQLite's own included), each as one lower-case string; with
    `decrypt` (the store's key: PostgreSQL's text is encrypted), what each encrypted token says too."""
    out: dict[str, list[str]] = {}
    with engine.connect() as conn:
        names = list(inspect(engine).get_table_names())
        if engine.dialect.name == "sqlite":
            names = list(conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'")).scalars())
        for name in names:
            out[name] = []
            for row in conn.execute(text(f'SELECT * FROM "{name}"')):
                shown = json.dumps([_plain(v) for v in row], default=str)
                said = [decrypt(t) for t in FERNET_TOKEN.findall(shown)] if decrypt is not None else []
                out[name].append(" ".join([shown, *said]).lower())
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("latin-1")
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


def owner_rows(engine: Engine, owner_id: str, scope: str) -> dict[str, int]:
    with engine.connect() as conn:
        return {t.name: conn.execute(select(func.count()).select_from(t).where(
            t.c.owner_id == owner_id, t.c.scope == scope)).scalar_one() for t in OWNER_TABLES}


def erasure_leaves_nothing(console: Console) -> None:
    engine, a1 = console.runtime.engine, console.a1
    namesake = give_a1_everything(console)
    words = A1_WORDS + EXTRA_WORDS
    identity = (a1.owner_id, a1.id, a1.email, "ada quill")
    before = owner_rows(engine, a1.owner_id, console.a.id)
    theirs = owner_rows(engine, namesake.owner_id, namesake.scope)
    assert all(before.values()), before  # every sort of data is there to be erased
    cipher = console.runtime.store.cipher
    decrypt = cipher.decrypt if cipher is not None else None
    everything = " ".join(" ".join(rows) for rows in rows_of(engine, decrypt).values())
    assert [n for n in words + identity if n not in everything] == ["kazoo"]  # so the scan below can fail
    # (the forgotten kazoo memory is gone already; its tombstone holds no words)

    staff = console.client(console.sA)
    logged = staff.post(f"/staff/people/{a1.id}/erasure", data={"ticket": "GDPR-17"})
    request_id = request_id_from(logged)
    done = staff.post(f"/staff/erasure/{request_id}", data={"confirm": a1.email})
    assert done.status_code == 303
    request = console.runtime.support.request(console.sA, request_id)
    assert request.state == "completed" and request.completed_at is not None
    # The counts are a1's alone: nothing of the namesake was erased, nor is anything of them told.
    assert request.counts == {
        "memories": before["memories"], "revisions": before["memory_revisions"], "settings": before["memory_settings"],
        "refs": before["consolidation_refs"], "receipts": before["idempotency_receipts"],
        "tombstones": before["memory_tombstones"], "app_uses": before["app_uses"] + before["conversation_uses"],
        "app_controls": before["app_controls"], "jobs": before["consolidation_jobs"], "accounts": 1,
    }
    assert owner_rows(engine, namesake.owner_id, namesake.scope) == theirs
    assert console.runtime.service.is_paused(namesake)
    assert [m.text for m in console.runtime.service.list(namesake).items] == ["Dreams of a pangolin sanctuary"]

    tables = set(inspect(engine).get_table_names())
    # rate_limit_counters (PostgreSQL): keyed digests and counts only; huey_* (PostgreSQL): the job
    # queue, job ids only; both scanned below like the rest
    known = {t.name for t in metadata.sorted_tables} | {"alembic_version", "rate_limit_counters", "huey_kv",
                                                         "huey_schedule", "huey_task", "huey_counter"}
    assert tables - known == set()  # nothing the scan misses (no full-text shadow tables either)
    for table, rows in rows_of(engine, decrypt).items():
        for row in rows:
            if namesake.scope in row and table in {t.name for t in OWNER_TABLES}:
                continue  # the namesake's own rows
            leaked = [n for n in words + identity if n.lower() in row]
            if not leaked:
                continue
            assert table in (audit_log.name, erasure_requests.name), (table, leaked, row)
            assert set(leaked) <= {a1.owner_id, a1.id}, (table, leaked)  # ids only, never words, e-mail or name
            if table == erasure_requests.name:
                assert request_id in row and a1.id not in row
    # Only a1 was erased: the others keep everything.
    assert console.texts(console.a2) == ["Plays chess by mail"]
    assert console.texts(console.b1) == ["Collects zeppelin postcards"]
    assert console.runtime.accounts.get(console.a2.id) is not None


def test_erasure_leaves_nothing_but_the_content_free_trail_on_sqlite(console: Console) -> None:
    erasure_leaves_nothing(console)


@pytest.mark.postgres
def test_erasure_leaves_nothing_but_the_content_free_trail_on_postgresql(pg_engine: Engine, tmp_path: Path) -> None:
    console = build_console(pg_engine, tmp_path)
    try:
        erasure_leaves_nothing(console)
    finally:
        settle_all(30)  # the erasure's VACUUM: disposed under it, the pool would leak its connection
        console.runtime.dispose()


def test_completing_one_request_answers_every_open_request_for_that_person(console: Console) -> None:
    console.client(console.a1).post("/account/delete", data={"confirmed": "1"})  # the person asks...
    logged = log(console, ticket="ZD-200")  # ...and staff log the ticket that came in by mail
    other = log(console, "a2", ticket="ZD-201")
    assert console.client(console.sA).post(f"/staff/erasure/{logged}", data={"confirm": "ext-a1-owner"}).status_code == 303
    views = {v.request.requested_by + (v.request.ticket or ""): v for v in console.runtime.support.requests(console.sA)}
    assert views["person"].request.state == "completed" and views["staffZD-200"].request.state == "completed"
    assert views["person"].request.subject_user_id is None and not views["person"].near_deadline
    assert views["staffZD-201"].request.id == other and views["staffZD-201"].request.state == "open"
    assert sorted(e.ticket or "" for e in console.audit(action="erasure.completed")) == ["", "ZD-200"]


def test_an_erasure_refused_half_way_erases_nothing(console: Console) -> None:
    """The purge, the account's deletion, the request's completion and the audit entry are one
    transaction: when the database refuses the audit entry, none of the rest happened."""
    request_id = log(console)
    with console.runtime.engine.begin() as conn:
        conn.execute(text("CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log WHEN NEW.action = 'erasure.completed' "
                          "BEGIN SELECT RAISE(ABORT, 'audit refused'); END"))
    before = console.state()
    with pytest.raises(Exception, match="audit refused"):
        console.runtime.support.complete_erasure(console.sA, request_id, console.a1.email)
    assert console.state() == before
    assert console.runtime.accounts.get(console.a1.id) is not None
    assert console.runtime.support.request(console.sA, request_id).state == "open"


def test_every_scope_only_when_the_host_says_owner_ids_are_unique(console: Console, tmp_path: Path) -> None:
    console = open_console(console.runtime.engine, tmp_path, MEMORY_ERASURE_SCOPE="all")
    namesake = Place(console.a1.owner_id, console.b.id)
    console.remember(namesake, "Dreams of a pangolin sanctuary", kind="goal")
    request_id = log(console)
    staff = console.client(console.sA)
    assert "in every organisation" in page_text(staff.get(f"/staff/erasure/{request_id}"))
    answer = staff.post(f"/staff/erasure/{request_id}", data={"confirm": console.a1.email})
    assert answer.status_code == 303
    assert "Erased: everything kept about this person in every organisation" in page_text(staff.get(answer.headers["Location"]))
    assert console.runtime.service.list(namesake).items == []


def test_the_request_page_names_the_person_and_says_when_it_is_due(console: Console) -> None:
    """Issue 27: the page of one request showed an owner id, but neither who nor by when."""
    client = console.client(console.sA)
    request_id = log(console, "a1", "ZD-200", days_ago=10)
    received = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=10)
    text = page_text(client.get(f"/staff/erasure/{request_id}"))
    assert "Person Ada Quill" in text
    assert f"Due {format_date(received + timedelta(days=30), 'medium', locale='en')}" in text
    row = re.search(r'<tr data-testid="erasure-request".*?</tr>', client.get("/staff/erasure").get_data(as_text=True),
                    flags=re.S)
    assert row and ">Ada Quill</td>" in row.group(0)  # the list names the person too
    admin_row = re.search(r'<tr data-testid="erasure-request".*?</tr>',
                          console.client(console.admin).get("/staff/erasure").get_data(as_text=True), flags=re.S)
    assert admin_row and ">Ada Quill</td>" in admin_row.group(0)
    assert client.post(f"/staff/erasure/{request_id}", data={"confirm": console.a1.email}).status_code == 303
    done = page_text(client.get(f"/staff/erasure/{request_id}"))
    assert "Person Ada Quill" not in done and "account deleted" in done  # the name went with the account
    assert "Due " not in done  # answered: nothing is due any more
