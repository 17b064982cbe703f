"""Issue 14's whole list against a served instance: `memory-portal serve --workers 2` on a fresh SQLite
instance set up through the command line, attacked over real HTTP as a person, a script or a
browser would (DESIGN §11, CONVENTIONS "attack test beside its unit test").

One server answers most tests; the killed-worker lease (item 4) and the API rate limits (item 8,
in memory and on a real redis-server) get servers of their own on the same instance. Every answer
is recorded: the last tests check that no answer was a 500, that every error under /api was
problem+json, and that no server logged a word the tests wrote or a traceback.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from ..fakes.llm_server import FakeLLMServer, Reply
from .live_server import (
    PASSWORD,
    Browser,
    Instance,
    Recorder,
    Server,
    cli_ok,
    free_port,
    kill_hard,
    make_instance,
    redis_call,
    redis_server,
    serve,
    worker_talking_to,
)

ACCOUNTS = {"staff": "staff", "admin": "admin", "member": "member", "leaver": "member", "changer": "member",
            "ended": "member", "victim": "member", "target": "member"}
# Made-up words sent in bodies, transcripts and query strings: none may reach a log line.
WORDS = ("pgnulword", "surrogateword", "rolenulword", "querynulword", "searchnulword", "auditnulword", "deepword",
         "beeword", "tulipword", "patchword")
JSON = {"Content-Type": "application/json"}
PROBLEM = "application/problem+json"
# Ids that could change the route even percent-encoded (portal.inputs); "a?b" and "a#b" are ids that
# encoding keeps inside their segment (checked below, in the client test).
BAD_IDS = (".", "..", "a/b", "a/../b", "a\x00b")


def person(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def answer(r: httpx.Response) -> tuple[int, str]:
    """(status, problem code), or (status, what the body was instead of problem+json)."""
    ctype = r.headers.get("content-type", "")
    if not ctype.startswith(PROBLEM):
        return r.status_code, f"not problem+json: {ctype}"
    return r.status_code, r.json().get("code")


def redirected_to_login(r: httpx.Response) -> bool:
    return r.status_code in (302, 303) and "/login" in r.headers.get("location", "")


@pytest.fixture(scope="module")
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(scope="module")
def servers() -> list[Server]:
    return []  # every server the module started, for the log checks at the end


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Instance:
    return make_instance(tmp_path_factory.mktemp("instance"), ACCOUNTS)


@pytest.fixture(scope="module")
def server(instance: Instance, servers: list[Server], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = serve(instance.env, tmp_path_factory.mktemp("serve") / "gunicorn.log", workers=2)
    servers.append(running)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def api(server: Server, instance: Instance, recorder: Recorder) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base + "/api/v1", timeout=30, event_hooks={"response": [recorder]},
                      headers={"Authorization": f"Bearer {instance.key}"}) as client:
        yield client


@pytest.fixture
def browser(server: Server, recorder: Recorder) -> Iterator[Callable[..., Browser]]:
    made: list[Browser] = []

    def make(**kwargs: object) -> Browser:
        made.append(Browser(server, recorder, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for b in made:
        b.close()


@pytest.fixture
def signed_in(browser: Callable[..., Browser], instance: Instance) -> Callable[[str], Browser]:
    def sign_in(name: str) -> Browser:
        b = browser()
        done = b.sign_in(instance.email(name))
        assert done.status_code == 303, f"{name} could not sign in: {done.status_code}"
        return b

    return sign_in


def remember_three(api: httpx.Client, owner: str) -> None:
    for n in range(3):
        assert api.post(f"/people/{owner}/memories", json={"text": f"Grows tulipword bulbs in bed {n}"}).status_code == 201


def count(api: httpx.Client, owner: str) -> int:
    listed = api.get(f"/people/{owner}/memories")
    assert listed.status_code == 200
    return len(listed.json()["items"])


# ------------------------------------------------------------------ 1. ids that change the route


def test_client_refuses_ids_that_would_change_the_route_and_sends_nothing(api: httpx.Client, server: Server,
                                                                          instance: Instance) -> None:
    import portal.client
    from portal.client import MemoryClient, NotFound

    owner = person("clientprobe")
    remember_three(api, owner)
    with MemoryClient(server.base, instance.key) as memory:
        raised: Exception | None = None
        try:
            memory.forget(owner, "..")
        except Exception as exc:
            raised = exc
        assert count(api, owner) == 3, "forget(owner, '..') erased the person"
        invalid_id = getattr(portal.client, "InvalidId", None)
        assert isinstance(invalid_id, type) and issubclass(invalid_id, ValueError), "no portal.client.InvalidId"
        assert isinstance(raised, invalid_id) and raised.code == "invalid_id", repr(raised)  # type: ignore[attr-defined]
        # An id holding an escaped slash stays one segment: it names no memory, and no other route.
        first = memory.list(owner).items[0].id
        for inside in ("a%2Fb", f"{first}%2Fhistory", f"{first}%2F..%2F..", "a?b", "a#b", f"{first}?x=1"):
            with pytest.raises(NotFound):
                memory.get(owner, inside)
            with pytest.raises(NotFound):
                memory.forget(owner, inside)
        # The access log of the requests above may still be on its way from either worker: wait
        # until it stops growing before counting.
        logged, stable_since = -1, time.monotonic()
        while time.monotonic() - stable_since < 0.5:
            now = server.output().count(" /api/v1/")
            if now != logged:
                logged, stable_since = now, time.monotonic()
            time.sleep(0.05)
        calls: dict[str, Callable[[str], object]] = {
            "get": lambda i: memory.get(owner, i), "forget": lambda i: memory.forget(owner, i),
            "history": lambda i: memory.history(owner, i), "list": lambda i: memory.list(i),
            "remember": lambda i: memory.remember(i, "Grows tulipword bulbs"), "erase_person": memory.erase_person}
        not_refused = []
        for bad in BAD_IDS:
            for name, call in calls.items():
                try:
                    call(bad)
                    not_refused.append((bad, name, "answered"))
                except invalid_id as refused:
                    if refused.code != "invalid_id":  # type: ignore[attr-defined]
                        not_refused.append((bad, name, refused.code))  # type: ignore[attr-defined]
                except Exception as exc:
                    not_refused.append((bad, name, repr(exc)))
        assert not_refused == []
        # Nothing went out: the next request is the only one the server logs since.
        memory.list(owner)
        deadline = time.monotonic() + 5
        while server.output().count(" /api/v1/") == logged and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        assert server.output().count(" /api/v1/") == logged + 1
    assert count(api, owner) == 3


def test_server_answers_ids_that_are_no_ids_with_400_before_any_handler(api: httpx.Client) -> None:
    owner = person("rawprobe")
    remember_three(api, owner)
    cases = [(f"/people/{owner}/memories/%2E%2E", "invalid_id"), (f"/people/{owner}/memories/%2e", "invalid_id"),
             (f"/people/{owner}/memories/a%00b", "invalid_id"), (f"/people/{owner}/memories/{'m' * 201}", "invalid_id"),
             (f"/people/%2E%2E/memories/{'0' * 32}", "invalid_owner"),
             (f"/people/a%00b/memories/{'0' * 32}", "invalid_owner")]
    for path, code in cases:
        for method, suffix in (("DELETE", ""), ("GET", ""), ("GET", "/history")):
            assert answer(api.request(method, path + suffix)) == (400, code), (method, path + suffix)
    assert count(api, owner) == 3


# ------------------------------------------------------------------ 2. NUL, lone surrogates, long ids


def test_nul_and_lone_surrogates_in_text_role_and_query_are_invalid_text(api: httpx.Client) -> None:
    owner = person("nul")
    kept = api.post(f"/people/{owner}/memories", json={"text": "Grows tulipword bulbs by the door"})
    assert kept.status_code == 201
    memory = f"/people/{owner}/memories/{kept.json()['memory']['id']}"
    cases = [("POST", f"/people/{owner}/memories", {"text": "Secret pgnulword\x00 diagnosis"}),
             ("POST", f"/people/{owner}/memories", {"text": "Lone \ud800 surrogateword"}),
             ("POST", f"/people/{owner}/memories", {"text": "Grows tulipword bulbs", "role": "rolenulword\x00"}),
             ("POST", f"/people/{owner}/memories", {"text": "Grows tulipword bulbs", "role": "\udfff"}),
             ("PATCH", memory, {"text": "Patched patchword\x00 text"}),
             ("POST", f"/people/{owner}/recall", {"query": "querynulword\x00"}),
             ("POST", f"/people/{owner}/recall", {"query": "querynulword \ud800"})]
    for method, path, body in cases:
        sent = api.request(method, path, content=json.dumps(body).encode(), headers=JSON)  # \u escapes: valid JSON
        assert answer(sent) == (400, "invalid_text"), (method, body)
    assert count(api, owner) == 1
    assert api.get(memory).json()["text"] == "Grows tulipword bulbs by the door"


def owner_routes(api: httpx.Client) -> list[tuple[str, str]]:
    doc = api.get("/openapi.json").json()
    routes = [(m.upper(), p.removeprefix("/api/v1")) for p, item in doc["paths"].items() for m in item if "{owner_id}" in p]
    assert len(routes) >= 15, routes
    return routes


@pytest.mark.parametrize("owner", ["o" * 201, "nul%00owner"], ids=["201-characters", "NUL"])
def test_an_owner_id_that_is_no_id_is_invalid_owner_on_every_route(api: httpx.Client, owner: str) -> None:
    for method, path in owner_routes(api):
        url = path.replace("{owner_id}", owner).replace("{memory_id}", "0" * 32).replace("{name}", "remember")
        body = None if method in ("GET", "DELETE") else {"text": "Grows tulipword bulbs", "paused": True}
        assert answer(api.request(method, url, json=body)) == (400, "invalid_owner"), (method, path)


def test_nul_in_the_staff_search_and_the_audit_filter_is_a_400_page(signed_in: Callable[[str], Browser]) -> None:
    staff = signed_in("staff")
    for path, params in (("/staff/", {"q": "searchnulword\x00x"}), ("/staff/audit", {"action": "auditnulword\x00"})):
        found = staff.http.get(path, params=params)
        assert found.status_code == 400 and found.headers["content-type"].startswith("text/html"), (path, found.status_code)


# ------------------------------------------------------------------ 3. other 500s


def test_json_nested_1000_deep_is_json_too_deep(api: httpx.Client) -> None:
    owner = person("deep")
    bodies = [(f"/people/{owner}/memories", '{"text":"Deep deepword","kind":' + "[" * depth + "]" * depth + "}")
              for depth in (1000, 20_000)]
    bodies.append((f"/people/{owner}/tools/remember", '{"arguments":' + '{"a":' * 1000 + '"deepword"' + "}" * 1001))
    for path, body in bodies:
        assert answer(api.post(path, content=body.encode(), headers=JSON)) == (400, "json_too_deep"), (path, len(body))
    assert count(api, owner) == 0


def test_dates_at_the_ends_of_the_calendar_never_500(api: httpx.Client, signed_in: Callable[[str], Browser]) -> None:
    owner = person("cursor")
    remember_three(api, owner)
    real = api.get(f"/people/{owner}/memories", params={"limit": 1}).json()["next_cursor"]
    created, memory_id = json.loads(base64.urlsafe_b64decode(real + "=" * (-len(real) % 4)))  # the format we forge
    assert isinstance(created, str) and isinstance(memory_id, str)
    for moment in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"):
        forged = base64.urlsafe_b64encode(json.dumps([moment, memory_id]).encode()).decode().rstrip("=")
        assert answer(api.get(f"/people/{owner}/memories", params={"cursor": forged})) == (400, "invalid_cursor"), moment
    staff = signed_in("staff")
    for path in ("/staff/audit", "/staff/audit.csv"):
        assert staff.http.get(path, params={"to": "9999-12-31"}).status_code == 200, path
    assert staff.http.get("/staff/audit", params={"from": "0001-01-01", "to": "0001-01-01"}).status_code == 200


# ------------------------------------------------------------------ 4. a killed worker


def test_a_killed_workers_request_is_retried_after_its_lease_and_learnt_once(
    instance: Instance, recorder: Recorder, servers: list[Server], tmp_path_factory: pytest.TempPathFactory
) -> None:
    fact = "Keeps bees on the roof garden"
    facts = json.dumps({"facts": [{"text": fact, "kind": "fact", "importance": 4}], "summary": "beeword chat"})
    owner = person("lease")
    body = {"transcript": [{"role": "user", "text": "I keep bees on the roof garden, beeword"}], "ref": "conv-1"}
    with FakeLLMServer() as llm:
        llm.script(Reply(facts, delay=15), Reply(facts))
        env = {**instance.env, "MEMORY_LEASE_SECONDS": "3", "MEMORY_LLM_BASE_URL": llm.base_url,
               "MEMORY_LLM_MODEL": "fake"}
        srv = serve(env, tmp_path_factory.mktemp("lease") / "gunicorn.log", workers=2)
        servers.append(srv)
        client = httpx.Client(base_url=srv.base + "/api/v1", timeout=40, event_hooks={"response": [recorder]},
                              headers={"Authorization": f"Bearer {instance.key}"})
        try:
            url = f"/people/{owner}/consolidate"
            first: list[BaseException] = []

            def send() -> None:
                try:
                    client.post(url, json=body, headers={"Idempotency-Key": "stuck-1"})
                except httpx.TransportError as exc:
                    first.append(exc)

            thread = threading.Thread(target=send)
            thread.start()
            deadline = time.monotonic() + 20
            while not llm.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            assert llm.requests, "the model was never asked"
            booted = srv.booted()
            holders = worker_talking_to(srv, int(llm.base_url.rsplit(":", 1)[1].split("/")[0]))
            kill_hard(holders)
            killed_at = time.monotonic()
            thread.join(20)
            assert first, "the request whose worker was killed got an answer"
            srv.wait_ready(booted + len(holders), time.monotonic() + 30)
            time.sleep(max(0.0, killed_at + 3.5 - time.monotonic()))
            retry = client.post(url, json=body, headers={"Idempotency-Key": "stuck-1"})
            assert answer(retry)[0] == 200, f"the retry after the lease: {answer(retry)}"
            assert (retry.json()["status"], retry.json()["added"]) == ("done", 1), retry.json()
            texts = [m["text"] for m in client.get(f"/people/{owner}/memories").json()["items"]]
            assert texts.count(fact) == 1, texts
            again = client.post(url, json=body, headers={"Idempotency-Key": "stuck-2"})
            assert (again.status_code, again.json()["status"]) == (200, "already")
        finally:
            client.close()
            srv.stop()


# ------------------------------------------------------------------ 5. sessions that end


def still_open(browser: Callable[..., Browser], cookie: str) -> list[str]:
    """The pages a browser holding only `cookie` still opens instead of being sent to sign in."""
    opened = []
    for path in ("/memories", "/account/export.json"):
        if not redirected_to_login(browser(cookies={"session": cookie}).http.get(path)):
            opened.append(path)
    return opened


def test_logout_ends_the_session_a_copied_cookie_held(signed_in: Callable[[str], Browser],
                                                       browser: Callable[..., Browser]) -> None:
    leaver = signed_in("leaver")
    cookie = leaver.http.cookies["session"]
    assert still_open(browser, cookie) == ["/memories", "/account/export.json"]
    assert leaver.post("/logout").status_code == 303
    assert still_open(browser, cookie) == []


def test_a_password_change_from_the_cli_ends_every_session(signed_in: Callable[[str], Browser],
                                                            browser: Callable[..., Browser], instance: Instance) -> None:
    cookies = [signed_in("changer").http.cookies["session"] for _ in range(2)]
    assert still_open(browser, cookies[0]) == ["/memories", "/account/export.json"]
    cli_ok(["user", "set-password", "--email", instance.email("changer"), "--password-stdin"], instance.env,
           "a brand new password\n")
    assert [still_open(browser, c) for c in cookies] == [[], []]
    assert browser().sign_in(instance.email("changer"), "a brand new password").status_code == 303


def test_an_admin_ends_a_persons_sessions(signed_in: Callable[[str], Browser], browser: Callable[..., Browser],
                                          instance: Instance) -> None:
    cookie = signed_in("ended").http.cookies["session"]
    assert still_open(browser, cookie) == ["/memories", "/account/export.json"]
    admin = signed_in("admin")
    path = f"/admin/people/{instance.user_id('ended')}/end-sessions"
    asked = admin.post(path, token=admin.token("/admin/"))  # a plain form: asked on a page first
    assert asked.status_code == 200 and still_open(browser, cookie) != []
    ended = admin.post(path, {"confirmed": "1"}, token=admin.token("/admin/"))
    assert ended.status_code == 303, ended.status_code
    assert still_open(browser, cookie) == []


# ------------------------------------------------------------------ 6. 7. redirects and CSRF


@pytest.mark.parametrize("target", ["/.//evil.example", "{base}//evil.example", "/..//evil.example", "///evil.example",
                                    "{base}/.//evil.example", "/memories?kind=goal"])
def test_sign_in_never_sends_a_person_off_the_site(target: str, browser: Callable[..., Browser], server: Server,
                                                   instance: Instance) -> None:
    done = browser().sign_in(instance.email("member"), next=target.format(base=server.base))
    location = done.headers.get("location", "")
    assert done.status_code == 303 and location
    assert not location.startswith("//") and "\\" not in location, location
    assert urlsplit(urljoin(server.base + "/login", location)).netloc == f"127.0.0.1:{server.port}", location
    if target.startswith("/memories"):
        assert urlsplit(location).path == "/memories"


def test_a_csrf_token_from_before_sign_in_is_refused_after_it(browser: Callable[..., Browser], instance: Instance) -> None:
    b = browser()
    before = b.token()
    signed = b.http.post("/login", data={"email": instance.email("member"), "password": PASSWORD, "csrf_token": before})
    assert signed.status_code == 303
    assert b.post("/account/pause", token=before).status_code == 400
    assert b.post("/account/pause").status_code == 303  # a token of the signed-in session works


def test_a_post_from_another_origin_is_refused(signed_in: Callable[[str], Browser], server: Server) -> None:
    b = signed_in("member")
    token = b.token("/memories")
    assert b.post("/account/pause", token=token, headers={"Origin": "https://evil.example"}).status_code == 403
    assert b.post("/account/pause", token=token, headers={"Referer": "https://evil.example/page"}).status_code == 403
    assert b.post("/account/pause", token=token, headers={"Origin": server.base}).status_code == 303


# ------------------------------------------------------------------ 8. throttling across workers


def test_sign_in_failures_lock_the_account_with_a_styled_page_in_the_persons_language(
    browser: Callable[..., Browser], instance: Instance
) -> None:
    b = browser()
    for _ in range(5):
        assert b.sign_in(instance.email("victim"), "not the password").status_code == 401
    locked = b.sign_in(instance.email("victim"))
    assert locked.status_code == 429, "the right password after 5 failures was not held back"
    assert '<link rel="stylesheet"' in locked.text and "Too many" in locked.text
    french = b.sign_in(instance.email("victim"), headers={"Accept-Language": "fr"})
    assert french.status_code == 429 and "Trop de" in french.text and '<link rel="stylesheet"' in french.text
    assert browser(address=b.address).sign_in(instance.email("staff")).status_code == 303


def test_twenty_rapid_guesses_across_both_workers_get_at_most_five_answers(
    browser: Callable[..., Browser], instance: Instance
) -> None:
    address = browser().address
    clients = [browser(address=address) for _ in range(4)]
    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(lambda n: clients[n % 4].sign_in(instance.email("target"), f"guess {n}").status_code,
                                 range(20)))
    assert statuses.count(401) <= 5 and statuses.count(401) + statuses.count(429) == 20, statuses
    # The attacker's address does not lock out the others behind it.
    assert browser(address=address).sign_in(instance.email("staff")).status_code == 303


def burst(base: str, key: str, recorder: Recorder, owner: str, n: int = 30) -> list[httpx.Response]:
    def one(_: int) -> httpx.Response:
        with httpx.Client(base_url=base + "/api/v1", timeout=30, event_hooks={"response": [recorder]},
                          headers={"Authorization": f"Bearer {key}"}) as client:
            return client.get(f"/people/{owner}/memories")

    with ThreadPoolExecutor(6) as pool:
        return list(pool.map(one, range(n)))


def assert_limited(answers: list[httpx.Response], limit: int, least: int) -> None:
    statuses = [a.status_code for a in answers]
    assert least <= statuses.count(200) <= limit, statuses
    assert statuses.count(200) + statuses.count(429) == len(answers), statuses
    for limited in (a for a in answers if a.status_code == 429):
        assert answer(limited) == (429, "rate_limited") and limited.headers.get("retry-after")


# 10 a minute is counted one by one; 150 a minute in leases of a few counts per worker
# (portal.adapters.sql.counters): across workers neither lets in more than its limit, and the leases
# hold back at most 7 counts a worker.
@pytest.mark.parametrize(("storage", "limit", "tries", "least"),
                         [("memory", 10, 30, 1), ("redis", 10, 30, 1), ("memory", 150, 240, 150 - 2 * 7)])
def test_the_api_rate_limit_per_key_holds_across_workers(storage: str, limit: int, tries: int, least: int,
                                                         instance: Instance, recorder: Recorder,
                                                         servers: list[Server],
                                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    env = {**instance.env, "MEMORY_API_RATE_LIMIT": f"{limit}/minute"}
    redis_port = free_port()
    with redis_server(redis_port) if storage == "redis" else nullcontext():
        if storage == "redis":
            env["RATELIMIT_STORAGE_URI"] = f"redis://127.0.0.1:{redis_port}"
        srv = serve(env, tmp_path_factory.mktemp(f"limit-{storage}") / "gunicorn.log", workers=2)
        servers.append(srv)
        try:
            assert_limited(burst(srv.base, instance.key, recorder, person(f"limited{limit}"), tries), limit, least)
        finally:
            srv.stop()
        if storage == "redis":
            assert redis_call(redis_port, "DBSIZE") not in ("", ":0"), "nothing was counted in redis"


# ------------------------------------------------------------------ 9. HTTP conventions


def test_retry_after_only_on_429_and_503(api: httpx.Client, browser: Callable[..., Browser]) -> None:
    owner = person("headers")
    answers = {200: api.get(f"/people/{owner}/memories"),
               201: api.post(f"/people/{owner}/memories", json={"text": "Grows tulipword bulbs in pots"}),
               404: api.get(f"/people/{owner}/memories/{'0' * 32}"),
               422: api.post(f"/people/{owner}/memories", json={"text": ""})}
    assert {s: a.status_code for s, a in answers.items()} == {200: 200, 201: 201, 404: 404, 422: 422}
    assert {s: a.headers.get("retry-after") for s, a in answers.items()} == dict.fromkeys(answers)
    assert "retry-after" not in browser().http.get("/login").headers


def test_405_under_the_api_names_the_allowed_methods(api: httpx.Client) -> None:
    refused = api.put("/tools", json={})
    assert answer(refused) == (405, "method_not_allowed")
    assert "GET" in refused.headers.get("allow", "")


def test_an_over_long_request_line_is_414_problem_json(api: httpx.Client) -> None:
    assert answer(api.get("/" + "x" * 10_000)) == (414, "uri_too_long")
    assert answer(api.get("/" + "x" * 6_000))[1] in ("not_found", "uri_too_long")  # problem+json either way


# ------------------------------------------------------------------ 10. 11. CSV cells and importance


def test_the_audit_csv_neutralises_cells_a_spreadsheet_would_run(signed_in: Callable[[str], Browser],
                                                                  instance: Instance) -> None:
    staff = signed_in("staff")
    token = staff.token("/staff/")
    for ticket in ("-A1-B2", "+A1", "@A1"):
        assert staff.post(f"/staff/people/{instance.user_id('member')}/erasure", {"ticket": ticket}, token).status_code == 303
    exported = staff.http.get("/staff/audit.csv")
    assert exported.status_code == 200
    rows = list(csv.reader(io.StringIO(exported.text)))
    tickets = [row[rows[0].index("ticket")] for row in rows[1:]]
    assert "'-A1-B2" in tickets, tickets
    assert [cell for row in rows[1:] for cell in row if cell[:1] in ("=", "+", "-", "@", "\t", "\r")] == []


def test_importance_must_be_a_finite_number(api: httpx.Client) -> None:
    owner = person("importance")
    for raw in ("NaN", "Infinity", "-Infinity", "1e999", "true"):
        body = f'{{"text":"Waters the tulipword ferns at {raw.lower()}","importance":{raw}}}'
        assert answer(api.post(f"/people/{owner}/memories", content=body.encode(), headers=JSON)) == (400, "invalid_request"), raw
    assert count(api, owner) == 0
    for given, kept in (("4", 4), (4.6, 5)):
        text = f"Waters the tulipword ferns at {given}"
        saved = api.post(f"/people/{owner}/memories", json={"text": text, "importance": given})
        assert (saved.status_code, saved.json()["memory"]["importance"]) == (201, kept), given


# ------------------------------------------------------------------ what every answer and log line showed


def test_zz_no_answer_was_a_500_and_every_api_error_was_problem_json(recorder: Recorder) -> None:
    assert recorder.seen, "nothing was recorded"
    assert [(m, p[:80], s) for m, p, s, _ in recorder.seen if s >= 500 and s != 503] == []
    assert [(m, p[:80], s, h.get("content-type")) for m, p, s, h in recorder.seen
            if p.startswith("/api/") and s >= 400 and not h.get("content-type", "").startswith(PROBLEM)] == []


def test_zz_no_server_logged_a_persons_words_or_a_traceback(server: Server, servers: list[Server]) -> None:
    for running in servers:
        output = running.output().lower()
        assert [w for w in WORDS if w in output] == [], running.log
        at = output.find("traceback")
        assert at < 0, running.output()[max(0, at - 300):at + 2500]
