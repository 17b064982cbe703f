"""The console with CSRF protection on, as in production: a forged POST to any staff or admin
route is refused and changes nothing; the token the page carries is accepted."""

from __future__ import annotations

from .conftest import A1_WORDS, PASSWORD, Console, csrf_token_of, page_text, request_id_from
from .test_access import admin_calls, staff_calls


def test_tokenless_console_posts_are_refused_and_the_page_token_works(console: Console) -> None:
    app = console.app(csrf=True)
    admin = app.test_client()
    token = csrf_token_of(admin.get("/login"))
    assert admin.post("/login", data={"email": console.admin.email, "password": PASSWORD,
                                      "csrf_token": token}).status_code == 303
    request_id = console.runtime.support.log_erasure(console.sA, console.a1.id, "A-1", None).id
    key, _token = console.runtime.administration.create_api_key(console.admin, console.a.id, ["erasure"], "k")
    before = console.state()
    calls = staff_calls(console.a1, request_id) + admin_calls(console.a.id, key.id, console.a2.id, console.sB.id)
    posts = [c for c in calls if c.method == "POST"]
    assert len(posts) == 14
    for call in posts:
        for headers in ({}, {"X-CSRFToken": "forged"}, {"HX-Request": "true"}):
            answer = admin.post(call.url, data=call.data, headers=headers)
            assert answer.status_code == 400, (call, headers)
            assert not any(word in answer.get_data(as_text=True) for word in A1_WORDS)
    assert console.state() == before

    person_page = admin.get(f"/staff/people/{console.a1.id}")
    token = csrf_token_of(person_page)
    opened = admin.post(f"/staff/people/{console.a1.id}/memories", data={"reason": "complaint", "csrf_token": token})
    assert opened.status_code == 200 and "axolotl" in page_text(opened)
    logged = admin.post(f"/staff/people/{console.a1.id}/erasure", data={"ticket": "CSRF-1", "csrf_token": token})
    assert logged.status_code == 303
    page = admin.get(logged.headers["Location"])
    done = admin.post(f"/staff/erasure/{request_id_from(logged)}", data={"confirm": "ext-a1-owner",
                                                                          "csrf_token": csrf_token_of(page)})
    assert done.status_code == 303
    assert console.runtime.accounts.get(console.a1.id) is None
