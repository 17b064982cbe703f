"""The admin console: tenants and their AI switch, staff accounts, API keys shown once — every
change audited and visible at once."""

from __future__ import annotations

import re

from portal.domain.types import Place

from .conftest import PASSWORD, Console, bare_cells, main_html, page_text


def test_create_a_tenant(console: Console) -> None:
    client = console.client(console.admin)
    answer = client.post("/admin/tenants", data={"name": "Tenant C"})  # the AI box left unticked
    assert answer.status_code == 303
    shown = page_text(client.get(answer.headers["Location"]))
    assert "Tenant created." in shown and "Tenant C" in shown
    tenant = console.runtime.tenants.find("Tenant C")
    assert tenant is not None and tenant.ai_enabled is False
    [entry] = console.audit(action="tenant.created")
    assert (entry.actor_id, entry.scope) == (console.admin.id, tenant.id)
    again = client.post("/admin/tenants", data={"name": "Tenant C", "ai": "on"})
    assert "A tenant with that name exists already." in page_text(client.get(again.headers["Location"]))
    assert len(console.audit(action="tenant.created")) == 1


def test_switch_the_ai_off_and_on(console: Console) -> None:
    client = console.client(console.admin)
    place = Place(console.a1.owner_id, console.a.id)
    assert console.runtime.tenants.ai_enabled(place)  # read once: the answer is now cached
    answer = client.post(f"/admin/tenants/{console.a.id}/ai", data={"enabled": "0"})
    assert answer.status_code == 303
    assert not console.runtime.tenants.ai_enabled(place)  # the switch clears the cache at once
    html = bare_cells(main_html(client.get("/admin/")))
    row = re.search(r'<tr data-testid="tenant"><td>Tenant A</td>.*?</tr>', html, flags=re.S)
    assert row and "<td>off</td>" in row.group(0) and "Switch AI on" in row.group(0)
    outcome = console.runtime.service.consolidate(place, "I like tea", ref="c-1")
    assert (outcome.status, outcome.reason) == ("unavailable", "ai_disabled")  # what the assistant backend meets
    client.post(f"/admin/tenants/{console.a.id}/ai", data={"enabled": "1"})
    assert console.runtime.tenants.ai_enabled(place)
    assert console.runtime.tenants.ai_enabled(Place(console.b1.owner_id, console.b.id))  # B never changed
    assert [e.action for e in console.audit(actor_id=console.admin.id)] == ["tenant.ai_on", "tenant.ai_off"]
    assert client.post("/admin/tenants/no-such-tenant/ai", data={"enabled": "0"}).status_code == 404


def test_create_a_staff_account_that_can_sign_in(console: Console) -> None:
    client = console.client(console.admin)
    data = {"email": "Nina@B.example", "name": "Nina New", "tenant": console.b.id, "role": "staff", "password": PASSWORD}
    answer = client.post("/admin/staff", data=data)
    assert answer.status_code == 303
    assert "Account created." in page_text(client.get(answer.headers["Location"]))
    listed = client.get("/admin/").get_data(as_text=True)
    assert re.search(r"nina@b.example</td><td[^>]*>Nina New</td><td[^>]*>Support staff</td><td[^>]*>Tenant B</td>\s*"
                     r"<td[^>]*>active", listed)  # the role in words
    nina = console.client(console.admin).application.test_client()
    assert nina.post("/login", data={"email": "nina@b.example", "password": PASSWORD}).headers["Location"] == "/staff/"
    assert "bea@b.example" in page_text(nina.get("/staff/?q=example"))  # B's staff: sees B's people
    assert "ada@a.example" not in page_text(nina.get("/staff/?q=example"))
    [entry] = console.audit(action="staff.created")
    assert (entry.actor_id, entry.scope) == (console.admin.id, console.b.id)
    refused = client.post("/admin/staff", data={**data, "email": "nina@b.example"})
    assert "An account with that e-mail exists already." in page_text(client.get(refused.headers["Location"]))
    member = client.post("/admin/staff", data={**data, "email": "m@b.example", "role": "member"})
    assert "Choose staff or admin." in page_text(client.get(member.headers["Location"]))
    short = client.post("/admin/staff", data={**data, "email": "s@b.example", "password": "short"})
    assert "at least 10 characters" in page_text(client.get(short.headers["Location"]))
    assert len(console.audit(action="staff.created")) == 1


def test_an_api_key_is_shown_once_verifies_and_can_be_revoked(console: Console) -> None:
    client = console.client(console.admin)
    keys = console.runtime.api_keys
    answer = client.post("/admin/keys", data={"tenant": console.b.id, "name": "assistant",
                                               "permission": ["memories:read", "erasure"]})
    # post/redirect/get: a reload of the page that shows the key cannot make a second one
    assert answer.status_code == 303 and answer.headers["Location"] == "/admin/keys/new"
    cookie = answer.headers.get("Set-Cookie", "")
    shown_page = client.get("/admin/keys/new")
    assert shown_page.status_code == 200
    assert shown_page.headers["Cache-Control"] == "no-store"
    shown = re.search(r'data-testid="new-key">([^<]+)<', shown_page.get_data(as_text=True))
    assert shown, "the new key is not on the page"
    token = shown.group(1).strip()
    # the key crossed the redirect sealed: not in the session cookie, not even once decoded
    secret = token.split("_", 2)[2]
    assert secret not in cookie and secret not in decoded_cookie(cookie)
    key = keys.verify(token)
    assert key is not None and key.tenant_id == console.b.id
    assert key.permissions == frozenset({"memories:read", "erasure"}) and key.name == "assistant"
    again = client.get("/admin/keys/new")  # the reload
    assert again.status_code == 303 and again.headers["Location"] == "/admin/"
    assert secret not in again.get_data(as_text=True)
    later = client.get("/admin/").get_data(as_text=True)
    assert token not in later and secret not in later  # never shown again, not even in part
    assert 'data-testid="new-key"' not in later
    assert re.search(rf"<code>{re.escape(key.prefix)}…</code>.*?assistant.*?active", later, flags=re.S)
    [created] = console.audit(action="api_key.created")
    assert (created.scope, created.ticket) == (console.b.id, key.id) and token not in str(created)

    asked = client.post(f"/admin/keys/{key.id}/revoke")  # without JavaScript: asked first
    assert asked.status_code == 200 and "Revoke this key?" in page_text(asked)
    assert keys.verify(token) is not None
    revoked = client.post(f"/admin/keys/{key.id}/revoke", data={"confirmed": "1"})
    assert revoked.status_code == 303
    assert "Key revoked." in page_text(client.get(revoked.headers["Location"]))
    assert keys.verify(token) is None
    assert "revoked" in page_text(client.get("/admin/"))
    assert [e.ticket for e in console.audit(action="api_key.revoked")] == [key.id]
    assert client.post(f"/admin/keys/{key.id}/revoke", data={"confirmed": "1"}).status_code == 404  # once only
    assert client.post("/admin/keys/nope/revoke", data={"confirmed": "1"}).status_code == 404


def test_an_api_key_without_permissions_is_refused(console: Console) -> None:
    client = console.client(console.admin)
    answer = client.post("/admin/keys", data={"tenant": console.a.id, "name": "nothing"})
    assert answer.status_code == 303
    assert "at least one permission" in page_text(client.get(answer.headers["Location"]))
    assert console.runtime.api_keys.list() == []


def test_the_tenant_of_a_new_key_is_chosen_not_defaulted(console: Console) -> None:
    client = console.client(console.admin)
    html = client.get("/admin/").get_data(as_text=True)
    select = re.search(r'<select id="key-tenant"[^>]*>(.*?)</select>', html, flags=re.S)
    assert select and re.search(r'<option value="" selected[^>]*>', select.group(1))
    assert "required" in re.search(r'<select id="key-tenant"[^>]*>', html).group(0)  # type: ignore[union-attr]
    refused = client.post("/admin/keys", data={"tenant": "", "permission": ["memories:read"]})
    assert refused.status_code == 303 and refused.headers["Location"] == "/admin/"
    assert console.audit(action="api_key.created") == []


def decoded_cookie(header: str) -> str:
    """The session cookie's payload as text (itsdangerous: base64, zlib-compressed when it starts with '.')."""
    import base64
    import zlib

    found = re.search(r"session=([^;]+)", header)
    if not found:
        return ""
    payload = found.group(1).split(".")[1 if found.group(1).startswith(".") else 0]
    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    return (zlib.decompress(raw) if found.group(1).startswith(".") else raw).decode("utf-8", "replace")


def test_the_console_navigation_marks_the_current_page(console: Console) -> None:
    client = console.client(console.admin)
    for path, current in (("/staff/", "People"), ("/staff/erasure", "Erasure requests"),
                          ("/staff/audit", "Audit log"), ("/admin/", "Administration")):
        html = client.get(path).get_data(as_text=True)
        marked = re.findall(r'<a href="[^"]+" aria-current="page">([^<]+)</a>', html)
        assert marked == [current], (path, marked)


def test_an_admin_disables_sets_a_password_for_and_removes_a_staff_account(console: Console) -> None:
    admin = console.client(console.admin)
    accounts = console.runtime.accounts
    signed_in = console.client(console.sB, through_form=True)
    assert signed_in.get("/staff/").status_code == 200
    asked = admin.post(f"/admin/staff/{console.sB.id}/disable")  # without JavaScript: asked first
    assert asked.status_code == 200 and console.sB.email in page_text(asked)
    assert accounts.get(console.sB.id).disabled is False  # type: ignore[union-attr]
    done = admin.post(f"/admin/staff/{console.sB.id}/disable", data={"confirmed": "1"})
    assert done.status_code == 303
    assert "The account is disabled and signed out everywhere." in page_text(admin.get("/admin/"))
    assert accounts.authenticate(console.sB.email, PASSWORD) is None
    assert signed_in.get("/staff/").status_code in (302, 303)  # its session ended
    assert re.search(r'data-testid="staff-account"><td>' + re.escape(console.sB.email) + r".*?disabled",
                     bare_cells(admin.get("/admin/").get_data(as_text=True)), flags=re.S)

    assert admin.post(f"/admin/staff/{console.sB.id}/password", data={"password": "short"}).status_code == 303
    assert "at least 10 characters" in page_text(admin.get("/admin/"))
    assert admin.post(f"/admin/staff/{console.sB.id}/password", data={"password": "a brand new password"}).status_code == 303
    assert accounts.authenticate(console.sB.email, "a brand new password") is not None  # enabled again

    assert admin.post(f"/admin/staff/{console.sB.id}/remove", data={"confirmed": "1"}).status_code == 303
    assert accounts.get(console.sB.id) is None
    actions = [e.action for e in console.audit() if e.subject_owner_id == console.sB.owner_id]
    assert {"staff.disabled", "staff.password_set", "staff.removed"} <= set(actions)


def test_a_persons_account_or_ones_own_is_not_a_staff_account_to_change(console: Console) -> None:
    admin = console.client(console.admin)
    for path in (f"/admin/staff/{console.a1.id}/disable", f"/admin/staff/{console.a1.id}/remove",
                 f"/admin/staff/{console.admin.id}/disable", f"/admin/staff/{console.admin.id}/remove"):
        assert admin.post(path, data={"confirmed": "1"}).status_code == 303, path
    text = page_text(admin.get("/admin/"))
    assert "You cannot do this to your own account." in text and "through an erasure request" in text
    assert console.runtime.accounts.get(console.a1.id) is not None
    assert console.runtime.accounts.authenticate(console.admin.email, PASSWORD) is not None
    assert admin.post("/admin/staff/nope/remove", data={"confirmed": "1"}).status_code == 404
    assert console.client(console.sA).post(f"/admin/staff/{console.sB.id}/disable",
                                           data={"confirmed": "1"}).status_code == 404  # staff are not admins


def test_a_new_key_is_shown_only_to_the_admin_who_made_it_in_that_sign_in(console: Console) -> None:
    """The key waits in the (cookie) session between the POST and the page that shows it: it must
    not wait there for whoever signs in next on the same browser."""
    other = console.runtime.accounts.create("root2@b.example", "Other Admin", console.b.id, "admin", PASSWORD)
    browser = console.client(console.admin, through_form=True)
    made = browser.post("/admin/keys", data={"tenant": console.b.id, "permission": ["memories:read"]})
    assert made.status_code == 303  # the redirect is not followed: the admin walks away
    assert browser.post("/logout").status_code == 303
    assert browser.post("/login", data={"email": other.email, "password": PASSWORD}).status_code == 303
    shown = browser.get("/admin/keys/new")
    assert shown.status_code == 303 and 'data-testid="new-key"' not in shown.get_data(as_text=True)
    # and sealed for one sign-in: the same admin, signed in again, does not get it either
    again = console.client(console.admin, through_form=True)
    again.post("/admin/keys", data={"tenant": console.b.id, "permission": ["memories:read"]})
    again.post("/logout")
    again.post("/login", data={"email": console.admin.email, "password": PASSWORD})
    assert again.get("/admin/keys/new").status_code == 303


def test_removing_a_staff_account_erases_what_it_kept_too(console: Console) -> None:
    service = console.runtime.service
    service.remember(console.sB.place, "Staff private note about the rota")
    assert service.list(console.sB.place, state="all").items
    admin = console.client(console.admin)
    assert admin.post(f"/admin/staff/{console.sB.id}/remove", data={"confirmed": "1"}).status_code == 303
    assert service.list(console.sB.place, state="all").items == []
    [removed] = console.audit(action="staff.removed")
    assert removed.counts is not None and removed.counts["memories"] == 1 and removed.counts["accounts"] == 1


def test_a_change_that_would_be_refused_is_not_asked_about(console: Console) -> None:
    admin = console.client(console.admin)
    for path in (f"/admin/staff/{console.a1.id}/disable", f"/admin/staff/{console.admin.id}/remove"):
        answer = admin.post(path)  # not confirmed: refused at once rather than a page asking
        assert answer.status_code == 303, path
    assert console.runtime.accounts.get(console.a1.id).disabled is False  # type: ignore[union-attr]
    assert admin.post(f"/admin/staff/{console.a1.id}/password", data={"password": "a brand new password"}).status_code == 303
    assert console.runtime.accounts.authenticate(console.a1.email, "a brand new password") is None  # not a staff account


def test_an_admin_lands_on_the_administration_and_staff_on_the_console(console: Console) -> None:
    """Issue 27: an admin signing in was sent to the support console's search."""
    app = console.app()
    admin = app.test_client().post("/login", data={"email": console.admin.email, "password": PASSWORD})
    assert admin.status_code == 303 and admin.headers["Location"] == "/admin/"
    staff = app.test_client().post("/login", data={"email": console.sA.email, "password": PASSWORD})
    assert staff.status_code == 303 and staff.headers["Location"] == "/staff/"
    person = app.test_client().post("/login", data={"email": console.a1.email, "password": PASSWORD})
    assert person.status_code == 303 and person.headers["Location"] == "/memories"
    asked = app.test_client().post("/login?next=/staff/audit", data={"email": console.admin.email, "password": PASSWORD})
    assert asked.headers["Location"] == "/staff/audit"  # where they were going still wins
    assert console.client(console.admin).get("/login").headers["Location"] == "/admin/"  # signed in already


def test_an_empty_key_table_says_there_is_none_and_how_to_make_one(console: Console) -> None:
    client = console.client(console.admin)
    table = re.search(r"<h2>API keys</h2>.*?</table>", main_html(client.get("/admin/")), flags=re.S)
    assert table is not None
    said = page_text_of(table.group(0))
    assert "No API key yet." in said and "Create one below" in said and "shown once" in said
    client.post("/admin/keys", data={"tenant": console.a.id, "name": "assistant", "permission": ["memories:read"]})
    table = re.search(r"<h2>API keys</h2>.*?</table>", main_html(client.get("/admin/")), flags=re.S)
    assert table is not None and "No API key yet." not in table.group(0) and "assistant" in table.group(0)


def page_text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())
