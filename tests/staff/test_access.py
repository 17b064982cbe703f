"""Who may use which console route: anonymous visitors are sent to sign in, people get 404 (the
console does not exist for them), staff see only their own tenant (anything of another tenant is
"not found" and changes nothing), staff get 404 on every admin route, and admins may do everything.

Every route of the `staff` and `admin` blueprints is listed here; a route added without a line in
ROUTES fails `test_every_console_route_is_checked`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from portal.domain.people import User

from .conftest import A1_WORDS, B1_TEXT, PASSWORD, Console, main_html, page_text


@dataclass(frozen=True)
class Call:
    endpoint: str
    method: str
    url: str
    data: dict[str, Any] | None = None
    about_person: bool = False  # touches one person or one request (not a list or the console's home)


def staff_calls(person: User, request_id: str) -> list[Call]:
    """Every staff route, aimed at `person` and the erasure request `request_id`; the completing
    POST comes last, since it erases the person."""
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    return [
        Call("staff.people", "GET", f"/staff/?q={person.email}"),
        Call("staff.person", "GET", f"/staff/people/{person.id}", about_person=True),
        Call("staff.open_memories", "POST", f"/staff/people/{person.id}/memories",
             {"reason": "access_request", "ticket": "T-1"}, about_person=True),
        Call("staff.export", "POST", f"/staff/people/{person.id}/export", {"ticket": "T-2"}, about_person=True),
        Call("staff.log_erasure", "POST", f"/staff/people/{person.id}/erasure",
             {"ticket": "T-3", "received": today}, about_person=True),
        Call("staff.erasures", "GET", "/staff/erasure"),
        Call("staff.erasure", "GET", f"/staff/erasure/{request_id}", about_person=True),
        Call("staff.audit", "GET", "/staff/audit"),
        Call("staff.audit_csv", "GET", "/staff/audit.csv"),
        Call("staff.complete_erasure", "POST", f"/staff/erasure/{request_id}", {"confirm": person.email}, about_person=True),
    ]


def admin_calls(tenant_id: str, key_id: str, person_id: str, staff_id: str) -> list[Call]:
    return [
        Call("admin.index", "GET", "/admin/"),
        Call("admin.create_tenant", "POST", "/admin/tenants", {"name": "Tenant C", "ai": "on"}),
        Call("admin.switch_ai", "POST", f"/admin/tenants/{tenant_id}/ai", {"enabled": "0"}),
        Call("admin.set_learnt_days", "POST", f"/admin/tenants/{tenant_id}/learnt-days", {"days": "90"}),
        Call("admin.create_staff", "POST", "/admin/staff",
             {"email": "new@a.example", "name": "Nina New", "tenant": tenant_id, "role": "staff", "password": PASSWORD}),
        Call("admin.create_key", "POST", "/admin/keys", {"tenant": tenant_id, "permission": ["memories:read"], "name": "k2"}),
        Call("admin.new_key", "GET", "/admin/keys/new"),  # right after create_key: the key, once
        Call("admin.revoke_key", "POST", f"/admin/keys/{key_id}/revoke", {"confirmed": "1"}),
        Call("admin.end_sessions", "POST", f"/admin/people/{person_id}/end-sessions", {"confirmed": "1"}),
        Call("admin.set_staff_password", "POST", f"/admin/staff/{staff_id}/password", {"password": "a brand new password"}),
        Call("admin.disable_staff", "POST", f"/admin/staff/{staff_id}/disable", {"confirmed": "1"}),
        Call("admin.remove_staff", "POST", f"/admin/staff/{staff_id}/remove", {"confirmed": "1"}),
    ]


# What an allowed call answers.
ALLOWED = {
    ("staff.people", "GET"): 200, ("staff.person", "GET"): 200, ("staff.open_memories", "POST"): 200,
    ("staff.export", "POST"): 200, ("staff.log_erasure", "POST"): 303, ("staff.erasures", "GET"): 200,
    ("staff.erasure", "GET"): 200, ("staff.audit", "GET"): 200, ("staff.audit_csv", "GET"): 200,
    ("staff.complete_erasure", "POST"): 303, ("admin.index", "GET"): 200, ("admin.create_tenant", "POST"): 303,
    ("admin.switch_ai", "POST"): 303, ("admin.create_staff", "POST"): 303, ("admin.create_key", "POST"): 303,
    ("admin.new_key", "GET"): 200, ("admin.set_staff_password", "POST"): 303, ("admin.disable_staff", "POST"): 303,
    ("admin.remove_staff", "POST"): 303,
    ("admin.revoke_key", "POST"): 303, ("admin.end_sessions", "POST"): 303, ("admin.set_learnt_days", "POST"): 303,
}


@dataclass
class Fixtures:
    request_a: str
    request_b: str
    key_id: str


@pytest.fixture
def setup(console: Console) -> Fixtures:
    support = console.runtime.support
    request_a = support.log_erasure(console.sA, console.a1.id, "A-1", None).id
    request_b = support.log_erasure(console.sB, console.b1.id, "B-1", None).id
    key, _token = console.runtime.administration.create_api_key(console.admin, console.a.id, ["memories:read"], "k1")
    return Fixtures(request_a, request_b, key.id)


def every_call(console: Console, setup: Fixtures) -> list[Call]:
    return staff_calls(console.a1, setup.request_a) + admin_calls(
        console.a.id, setup.key_id, console.a1.id, console.sB.id)


def send(client: Any, call: Call) -> Any:
    if call.method == "GET":
        return client.get(call.url)
    return client.post(call.url, data=call.data or {})


def test_every_console_route_is_checked(console: Console, setup: Fixtures) -> None:
    app = console.app()
    served = {(rule.endpoint, method) for rule in app.url_map.iter_rules()
              if rule.endpoint.split(".")[0] in ("staff", "admin") for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}}
    checked = {(c.endpoint, c.method) for c in every_call(console, setup)}
    assert served == checked == set(ALLOWED)


def test_anonymous_visitors_are_sent_to_sign_in(console: Console, setup: Fixtures) -> None:
    client = console.client()
    before = console.state()
    for call in every_call(console, setup):
        answer = send(client, call)
        assert answer.status_code == 302, call
        location = answer.headers["Location"]
        # A page comes back after signing in; a POST is not replayed.
        wanted = "/login?next=" + call.url.split("?")[0] if call.method == "GET" else "/login"
        assert location.startswith(wanted), (call, location)
    assert console.state() == before


def test_people_get_not_found_on_every_console_route(console: Console, setup: Fixtures) -> None:
    client = console.client(console.a1)
    before = console.state()
    for call in every_call(console, setup):
        assert send(client, call).status_code == 404, call
    assert console.state() == before


def test_staff_get_not_found_on_every_admin_route(console: Console, setup: Fixtures) -> None:
    client = console.client(console.sA)
    before = console.state()
    for call in admin_calls(console.a.id, setup.key_id, console.a1.id, console.sB.id):
        assert send(client, call).status_code == 404, call
    assert console.state() == before
    assert "Administration" not in page_text(client.get("/staff/"))  # no link to it either


def test_staff_may_do_everything_for_their_own_tenant(console: Console, setup: Fixtures) -> None:
    client = console.client(console.sA)
    for call in staff_calls(console.a1, setup.request_a):
        answer = send(client, call)
        assert answer.status_code == ALLOWED[(call.endpoint, call.method)], (call, answer.status_code)
    assert console.runtime.accounts.get(console.a1.id) is None  # the last call erased a1
    assert console.runtime.support.request(console.sA, setup.request_a).state == "completed"


@pytest.mark.parametrize("staff, person", [("sA", "b1"), ("sB", "a1")])
def test_staff_get_not_found_for_anything_of_another_tenant(console: Console, setup: Fixtures, staff: str,
                                                            person: str) -> None:
    actor, target = getattr(console, staff), getattr(console, person)
    own_request, other_request = (setup.request_a, setup.request_b) if staff == "sA" else (setup.request_b, setup.request_a)
    client = console.client(actor)
    before = console.state()
    calls = [c for c in staff_calls(target, other_request) if c.about_person]
    # Break glass without a reason, on someone of another tenant, is "not found" as well.
    calls.append(Call("staff.open_memories", "POST", f"/staff/people/{target.id}/memories", {"reason": ""}))
    for call in calls:
        answer = send(client, call)
        assert answer.status_code == 404, (call, answer.status_code)
        assert target.email not in answer.get_data(as_text=True), call
    assert console.state() == before
    # The lists show nothing of the other tenant either.
    assert page_text(client.get(f"/staff/?q={target.email}")).count(target.email) == 0
    listed = client.get("/staff/erasure").get_data(as_text=True)
    assert own_request in listed and other_request not in listed
    audit = main_html(client.get("/staff/audit"))
    assert target.owner_id not in audit
    assert target.owner_id not in client.get("/staff/audit.csv").get_data(as_text=True)


def test_admins_may_do_everything_in_every_tenant(console: Console, setup: Fixtures) -> None:
    client = console.client(console.admin)
    calls = staff_calls(console.b1, setup.request_b) + admin_calls(console.b.id, setup.key_id, console.sB.id, console.sB.id)
    for call in calls:
        answer = send(client, call)
        assert answer.status_code == ALLOWED[(call.endpoint, call.method)], (call, answer.status_code)
    assert console.runtime.accounts.get(console.b1.id) is None
    assert console.texts(console.b1) == []
    assert B1_TEXT not in str(console.state())
    # ...and a1 of the other tenant too, from the same console.
    page = client.get(f"/staff/people/{console.a1.id}")
    assert page.status_code == 200 and console.a1.email in page_text(page)
    assert not any(word in page.get_data(as_text=True) for word in A1_WORDS)


def test_staff_cannot_act_on_staff_or_admin_accounts(console: Console) -> None:
    """Staff handle people's requests; they cannot open, export or erase a colleague or an admin."""
    client = console.client(console.sA)
    for target in (console.admin, console.sA):
        assert client.get(f"/staff/people/{target.id}").status_code == 404
        assert client.post(f"/staff/people/{target.id}/erasure", data={"ticket": "X-1"}).status_code == 404
        assert client.post(f"/staff/people/{target.id}/export").status_code == 404
    assert console.runtime.accounts.get(console.admin.id) is not None
    assert console.admin.email not in page_text(client.get("/staff/?q=a.example"))
    admin = console.client(console.admin)
    assert admin.get(f"/staff/people/{console.sA.id}").status_code == 200
