"""The erasure-completeness world: one person given a distinctive made-up word through every write
path, erased one way, then looked at everywhere a word could still be read (see
test_erasure_completeness.py for the promise and the order of the looks)."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from werkzeug.test import TestResponse

from portal.domain import text as text_module
from portal.domain.types import Place

from ..api.conftest import API, World
from ..fakes.llm_server import FakeLLMServer
from .erasure_expiry import expire_all, expiring
from .erasure_routes import background, cli_import, command, forget_about, mcp_call, portal_import
from .scans import holds, rows_naming, strings_in, words_in_files, words_in_postgres_files, words_in_tables

OWNER = "owner-zk81"
REF = "conv-zk81-1"
PERSON = f"{API}/people/{OWNER}"
PASSWORD = "correct horse battery"
PORTAL = {"WTF_CSRF_ENABLED": False, "LOGIN_RATE_LIMIT": "1000/minute"}  # CSRF is proven in tests/web

# One word per write path; each starts with two letters no other word of a world starts with (see
# scans.py). A world appends its own number, so words of two worlds never meet in this process.
# With a digit in it a word is its own ranking term (text.stem keeps such words whole).
WRITE_PATHS = {
    "api remember": "zqvarn", "api remember (keyed)": "qjolter",
    "api patch: wording before": "xvendrik", "api patch (keyed)": "vxoltra",
    "in-place patch: wording replaced": "jqamble", "in-place patch: new wording": "kzintor",
    "undo: wording kept": "wxumber", "undo: wording undone": "fqirrel",
    "tool remember (keyed)": "pzandro", "tool update_memory: before": "gxotham", "tool update_memory (keyed)": "bqueral",
    "consolidation fact 1": "mxillo", "consolidation fact 2": "hqorvin", "consolidation summary": "czembra",
    "portal add": "dqueton", "portal edit: before": "lxarpen", "portal edit: after": "nqimble",
    "recall (keyed read)": "rzotten", "tool recall (keyed read)": "sxiltor",
    "portal import": "tzumbrel", "cli import": "yqarvost", "mcp remember": "wqelthor", "job fact": "jxoprand",
    "job done: transcript": "kqindle", "job done: summary": "zxeltrum", "job failed: transcript": "qzorvane",
    "job queued: transcript": "vqumbert",
    "mem0 add: text": "bxantho", "mem0 add: metadata": "gqualtor",
    "remember with expiry": "mzorbat", "update with expiry: before": "vjandel", "update with expiry: after": "hjoltin",
    "conversation ref": "jzembrol",
}
# Gone whatever the way, by the end of `seed`: an in-place overwrite and an undo erase a wording, the
# sweep a person's own earlier wording once its Undo is over, the end of a job its transcript.
GONE_WHEN_CORRECTED = ("in-place patch: wording replaced", "undo: wording undone", "portal edit: before",
                       "job done: transcript", "job failed: transcript",
                       "conversation ref")  # an app's conversation reference: never kept, a digest is
# A conversation still queued is the person's data until it is learnt: forgetting memories leaves it.
PURGED_ONLY = ("job queued: transcript",)
WAYS = ("forget-api", "forget-portal", "forget-tool", "forget-mcp", "erase-everything", "staff-erasure", "api-erasure",
        "cli-erasure", "mem0-delete-all", "expiry", "forget-about", "corrected")
ERASING = WAYS[:-1]
FULL = ("staff-erasure", "api-erasure", "cli-erasure")
PURGING = ("erase-everything", "mem0-delete-all", *FULL)  # mem0's delete_all: the person's erase-everything
STORES = [pytest.param("sqlite"), pytest.param("postgres", marks=pytest.mark.postgres)]
# After "erase everything" these keep nothing naming the person (the account, their pause setting
# and the content-free audit entries may stay).
ERASE_ALL_TABLES = ("memories", "memory_revisions", "idempotency_receipts", "consolidation_refs", "memory_tombstones",
                    "consolidation_jobs")


def erased_in(way: str, words: dict[str, str]) -> dict[str, str]:
    """The words that must be gone after erasing one way (by write path)."""
    return {k: w for k, w in words.items()
            if k in GONE_WHEN_CORRECTED or (way in ERASING and (k not in PURGED_ONLY or way in PURGING))}


@dataclass(frozen=True)
class Keyed:
    """A request sent with an Idempotency-Key, to be replayed as it was."""

    method: str
    path: str
    body: Any
    key: str


@dataclass
class Run:
    """One world seeded, erased one way, and looked at: findings by look, one line per leak."""

    store: str
    way: str
    words: dict[str, str]
    erased: dict[str, str]
    findings: dict[str, list[str]] = field(default_factory=dict)

    def leaks(self, look: str) -> list[str]:
        return self.findings.get(look, [])

    def label(self, word: str) -> str:
        return next(f"{word!r} ({path})" for path, w in self.words.items() if w == word)

    def named(self, lines: list[str]) -> str:
        """The findings with each word followed by its write path."""
        shown = []
        for line in lines[:25]:
            for word in self.erased.values():
                line = line.replace(repr(word), self.label(word))
            shown.append(line)
        return f"{self.store}/{self.way}: {len(lines)} leak(s):\n  " + "\n  ".join(shown)


# ---------------------------------------------------------------------------- the world


class Person:
    """The world and the person's ways in: the API (tenant A's key) and a signed-in browser."""

    def __init__(self, world: World, email: str) -> None:
        self.world, self.email = world, email
        self.raw = world.raw()
        self.keyed: list[Keyed] = []
        self.browser = world.app.test_client()
        self.account = world.runtime.accounts.create(email, "Zed Kappa", world.tenant_a, "member", PASSWORD, owner_id=OWNER)
        with self.browser.session_transaction() as session:
            session["_user_id"], session["_fresh"] = self.account.get_id(), True

    @property
    def place(self) -> Place:
        return Place(OWNER, self.world.tenant_a)

    def api(self, method: str, path: str, body: Any = None, key: str | None = None, expect: int = 200) -> Any:
        headers = self.world.auth()
        if key:
            headers["Idempotency-Key"] = key
            self.keyed.append(Keyed(method, path, body, key))
        answer = self.raw.open(PERSON + path, method=method, json=body, headers=headers)
        assert answer.status_code == expect, (method, path, answer.status_code, answer.get_data(as_text=True)[:300])
        return answer.get_json(silent=True)

    def remember(self, text: str, key: str | None = None) -> dict[str, Any]:
        saved = self.api("POST", "/memories", {"text": text, "kind": "fact", "importance": 5}, key, 201)
        return saved["memory"]

    def portal(self, path: str, data: dict[str, str]) -> None:
        answer = self.browser.post(path, data=data)
        assert answer.status_code == 303, (path, answer.status_code, answer.get_data(as_text=True)[:300])

    def ids(self) -> list[str]:
        return [m.id for m in self.world.runtime.service.list(self.place, state="all", limit=200).items]

    def text_of(self, memory_id: str) -> str:
        return str(self.api("GET", f"/memories/{memory_id}")["text"])


def facts(*texts: str, summary: str) -> str:
    return json.dumps({"facts": [{"text": t, "kind": "fact", "importance": 5} for t in texts], "summary": summary})


def model_answer(w: dict[str, str]) -> str:
    """What the model answers for the seeded conversation (each time it is shown it: models do)."""
    return facts(f"Owns a {w['consolidation fact 1']} boat", f"Studies {w['consolidation fact 2']} dance",
                 summary=f"Talked about the {w['consolidation summary']} trip")


def seed(p: Person, w: dict[str, str], server: FakeLLMServer) -> None:
    """Every write path once, each with its word; then a recall (the worker now caches the place);
    then the in-place overwrite and the undo, after which their old wordings must be gone."""
    p.remember(f"Grows {w['api remember']} tomatoes")
    p.remember(f"Keeps a {w['api remember (keyed)']} lantern", key="k-remember")
    # mem0's add, with what it keeps beside the words (issue 28): metadata goes as the text goes
    added = p.raw.post("/v3/memories/add/", headers={"Authorization": f"Token {p.world.keys['a']}"}, json={
        "messages": [{"role": "user", "content": f"Collects {w['mem0 add: text']} stamps"}], "user_id": OWNER,
        "infer": False, "agent_id": "stamp-bot", "metadata": {"album": f"The {w['mem0 add: metadata']} album"}})
    assert added.status_code == 200, added.get_data(as_text=True)[:300]
    patched = p.remember(f"Likes {w['api patch: wording before']} tea")
    p.api("PATCH", f"/memories/{patched['id']}", {"text": f"Likes {w['api patch (keyed)']} tea"}, "k-patch")
    in_place = p.remember(f"Regrets the {w['in-place patch: wording replaced']} tattoo", key="k-in-place-first")
    undone = p.remember(f"Walks to the {w['undo: wording kept']} market")
    p.api("PATCH", f"/memories/{undone['id']}", {"text": f"Drives to the {w['undo: wording undone']} market"},
          "k-undo-patch")
    assert w["undo: wording undone"] in p.text_of(undone["id"])  # readable until undone
    assert p.api("POST", "/tools/remember", {"arguments": {"text": f"Plays the {w['tool remember (keyed)']} flute",
                                                             "importance": 5}}, "k-tool-remember")["ok"]
    painted = p.remember(f"Paints {w['tool update_memory: before']} birds")
    assert p.api("POST", "/tools/update_memory", {"arguments": {
        "id": painted["id"], "text": f"Paints {w['tool update_memory (keyed)']} birds"}}, "k-tool-update")["ok"]
    server.script(model_answer(w))
    transcript = [
        {"role": "user", "text": f"I own a {w['consolidation fact 1']} boat and study {w['consolidation fact 2']} dance."},
        {"role": "assistant", "text": "Lovely!"},
        {"role": "user", "text": f"We planned the {w['consolidation summary']} trip too."},
    ]
    done = p.api("POST", "/consolidate", {"transcript": transcript, "ref": REF}, "k-consolidate")
    assert (done["status"], done["added"]) == ("done", 2), done
    assert w["consolidation summary"] in done["summary"]
    p.portal("/memories", {"text": f"Collects {w['portal add']} stamps", "kind": "fact", "importance": "5"})
    p.portal("/memories", {"text": f"Bakes {w['portal edit: before']} bread", "kind": "fact", "importance": "5"})
    bread = next(m for m in p.world.runtime.service.list(p.place, limit=100).items if "bread" in m.text)
    p.portal(f"/memories/{bread.id}", {"text": f"Bakes {w['portal edit: after']} bread", "kind": "fact",
                                       "importance": "5", "revision": str(bread.revision)})
    p.remember(f"Reads {w['recall (keyed read)']} poems")
    found = p.api("POST", "/recall", {"query": w["recall (keyed read)"]}, "k-recall")
    assert w["recall (keyed read)"] in json.dumps(found)
    p.remember(f"Knits {w['tool recall (keyed read)']} scarves")
    found = p.api("POST", "/tools/recall", {"arguments": {"query": w["tool recall (keyed read)"]}}, "k-tool-recall")
    assert w["tool recall (keyed read)"] in json.dumps(found)
    assert w["in-place patch: wording replaced"] in p.text_of(in_place["id"])  # readable until replaced
    p.api("PATCH", f"/memories/{in_place['id']}", {"text": f"Has a small {w['in-place patch: new wording']} tattoo",
                                                   "in_place": True}, "k-in-place")
    restored = p.api("POST", f"/memories/{undone['id']}/undo", None, "k-undo")
    assert w["undo: wording kept"] in restored["memory"]["text"]
    portal_import(p, f"Sings {w['portal import']} songs")
    cli_import(p, f"Climbs {w['cli import']} walls")
    assert mcp_call(p, "remember", {"text": f"Fixes {w['mcp remember']} clocks", "importance": 5})["ok"]
    expiring(p, w)
    background(p, w, server, facts)
    # Time passes: the Undo of the portal edit is over, and the sweep (the worker's periodic task)
    # erases the wording it replaced. The unread summary waits (its retention is longer).
    later(p, minutes=16)
    assert p.world.runtime.service.sweep().revisions == 1


def later(p: Person, minutes: float) -> None:
    base = p.world.runtime.service.clock
    p.world.runtime.service.clock = lambda: base() + timedelta(minutes=minutes)


def erase(p: Person, way: str, words: dict[str, str] | None = None) -> None:
    if way == "forget-api":
        for memory_id in p.ids():
            p.api("DELETE", f"/memories/{memory_id}", expect=204)
    elif way == "forget-portal":
        for memory_id in p.ids():
            p.portal(f"/memories/{memory_id}/forget", {"confirmed": "1"})
    elif way == "forget-tool":
        for memory_id in p.ids():
            assert p.api("POST", "/tools/forget", {"arguments": {"id": memory_id}})["ok"]
    elif way == "forget-mcp":
        for memory_id in p.ids():
            assert mcp_call(p, "forget", {"id": memory_id})["ok"]
    elif way == "erase-everything":
        p.portal("/account/erase", {"confirm": p.email})
    elif way == "staff-erasure":
        staff_account = p.world.runtime.accounts.create(
            f"staff-{p.email}", "Sam Helper", p.world.tenant_a, "staff", PASSWORD)
        staff = p.world.app.test_client()
        with staff.session_transaction() as session:
            session["_user_id"], session["_fresh"] = staff_account.get_id(), True
        logged = staff.post(f"/staff/people/{p.account.id}/erasure", data={"ticket": "GDPR-zk81"})
        assert logged.status_code == 303, logged.status_code
        done = staff.post(logged.headers["Location"], data={"confirm": p.email})
        assert done.status_code == 303, (done.status_code, done.get_data(as_text=True)[:300])
    elif way == "api-erasure":
        p.api("DELETE", "", key="k-erase")
    elif way == "mem0-delete-all":  # mem0's client: MemoryClient.delete_all(user_id=...)
        gone = p.raw.delete(f"/v1/memories/?user_id={OWNER}", headers={"Authorization": f"Token {p.world.keys['a']}"})
        assert gone.status_code == 200, gone.get_data(as_text=True)[:300]
    elif way == "cli-erasure":
        command(p, "purge-owner", OWNER, "--tenant", p.place.scope, "--yes")
    elif way == "expiry":  # every memory expires; a real worker process sweeps them
        expire_all(p, list(WRITE_PATHS.values()))
    elif way == "forget-about":  # the portal's "Forget everything about …", the subject being every word
        forget_about(p, list((words or {}).values()))
    # "corrected": the in-place overwrite and the undo, done at the end of `seed`, are the erasure.


def reads(p: Person, ids: list[str], words: list[str], jobs: list[str]) -> Iterator[tuple[str, TestResponse]]:
    """Every API and portal answer of the person that lists or shows memories, and their jobs."""
    auth = p.world.auth()
    api: list[tuple[str, str, Any]] = [
        ("GET", "/memories", None), ("GET", "/memories?state=all&limit=200", None), ("GET", "/unseen", None),
        ("GET", "/export", None), ("GET", "/portrait?min_importance=1&max_length=100000", None),
        ("GET", "/portrait?format=dated&min_importance=1&max_length=100000", None),
        ("GET", "/portrait?format=json&min_importance=1&max_length=100000", None),
    ]
    for memory_id in ids:
        api += [("GET", f"/memories/{memory_id}", None), ("GET", f"/memories/{memory_id}/history", None)]
    api += [("GET", f"/jobs/{job_id}", None) for job_id in jobs]
    for word in words:
        api += [("POST", "/recall", {"query": word, "limit": 100}),
                ("POST", "/tools/recall", {"arguments": {"query": word, "limit": 20}})]
    for method, path, body in api:
        yield f"{method} {path}", p.raw.open(PERSON + path, method=method, json=body, headers=auth)
    portal = ["/memories", "/memories?kind=fact", "/memories?q=", "/account/export.json", "/account/export.csv", "/account/erase"]
    portal += [f"/memories?q={word}" for word in words]
    for memory_id in ids:
        portal += [f"/memories/{memory_id}/edit", f"/memories/{memory_id}/history"]
    for path in portal:
        yield f"portal GET {path}", p.browser.get(path)
        if path.startswith("/memories?"):  # the list as htmx swaps it in
            yield f"portal GET {path} (htmx)", p.browser.get(path, headers={"HX-Request": "true"})


def shown(label: str, answer: TestResponse) -> bytes:
    """What an answer shows; on the portal's search page the query itself is left out where the
    page repeats it (the search box, "Memories matching …"): only the list of results counts."""
    body = answer.get_data().lower()
    query = re.search(r"\?q=([a-z0-9]+)", label)
    if query is None:
        return body
    results = re.search(rb'<ul id="memory-list".*?</ul>', body, flags=re.S)
    listed = results.group(0) if results else b""
    return body.replace(listed, b"").replace(query.group(1).encode(), b"") + listed


def stemmer_keeps(word: str) -> bool:
    """Whether the process-wide stemming in portal.domain.text still holds `word`.

    A functools cache cannot list its keys, but it can be asked about one: stemming the word once
    more is a cache hit exactly when the word was kept. (Stemming it adds it, so each word is
    asked once, after the erasure and before any read that would stem it as a query.) Without
    such a cache, the module's own data is searched (a cache in a thread-local, say), and a
    PyStemmer object must have its word cache switched off (it cannot be listed either)."""
    stem = text_module.stem
    info = getattr(stem, "cache_info", None)
    if info is not None:
        before = info().hits
        stem(word)
        return bool(info().hits > before)
    kept = vars(text_module)
    if any(word in s for s in strings_in([v for k, v in kept.items() if not k.isupper() and not k.startswith("__")])):
        return True
    local = getattr(text_module, "_STEMMERS", None)
    stemmers = [*vars(local).values()] if local is not None and hasattr(local, "__dict__") else []
    return any(getattr(s, "maxCacheSize", 0) for s in stemmers)


def in_process(p: Person, run: Run) -> tuple[list[str], list[str]]:
    """(stemmer findings, recall cache findings), right after the erasure."""
    stemmed = [f"the stemmer cache holds {w!r}" for w in run.erased.values() if stemmer_keeps(w)]
    cache = getattr(p.world.runtime.store, "recall_cache", None)
    found: list[str] = []
    if cache is not None:
        kept = list(strings_in(cache))
        # Erased words are their own ranking terms (see WRITE_PATHS): a kept term holds the word.
        found += [f"the recall cache holds {w!r}" for w in run.erased.values() if any(w in s for s in kept)]
        if run.way in ERASING and any(OWNER in s for s in kept):
            found.append(f"the recall cache still keeps an entry for {OWNER}")
    return stemmed, found


def owner_rows(engine: Engine, way: str) -> list[str]:
    if way in ("erase-everything", "mem0-delete-all"):
        return rows_naming(engine, OWNER, tables=ERASE_ALL_TABLES)
    # The API's erasure answers for what the store keeps (§11 counts); the portal account is the
    # console's to delete, so `users` may still name the person there.
    return rows_naming(engine, OWNER, skip=("audit_log", "erasure_requests") + (("users",) if way != "staff-erasure" else ()))


class Kept(logging.Handler):
    """Every record the portal's own loggers write, as the text an operator would read."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def look(run: Run, p: Person, server: FakeLLMServer, database: Path | None) -> None:
    logger, kept = logging.getLogger("portal"), Kept()
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(kept)
    try:
        _look(run, p, server, database)
    finally:
        logger.removeHandler(kept)
        logger.setLevel(level)
    # CONVENTIONS: logs carry ids, codes and counts, never a person's words (erased or not).
    run.findings["logs"] = [f"a log line holds {w!r}: {line[:120]}" for line in kept.lines
                            for w in run.words.values() if w in line]


def _look(run: Run, p: Person, server: FakeLLMServer, database: Path | None) -> None:
    started = time.time()
    engine, store = p.world.runtime.engine, p.world.runtime.store
    decrypt = store.cipher.decrypt if store.cipher is not None else None  # PostgreSQL's worlds are encrypted
    # Kept before the erasure: all but the words gone by the end of `seed` and the synchronous
    # consolidation's summary (an answer only).
    present = [w for k, w in run.words.items() if k not in (*GONE_WHEN_CORRECTED, "consolidation summary")]
    seed(p, run.words, server)
    # The looks below can fail: before the erasure, every word still kept is in a table (read
    # through the store's key where it encrypts) and in the person's own download.
    before = "\n".join(words_in_tables(engine, present, decrypt=decrypt))
    assert all(repr(w) in before for w in present), before
    export = p.browser.get("/account/export.json").get_data(as_text=True)
    assert all(w in export for w in present), export[:500]
    ids = p.ids()
    jobs = [j["id"] for j in p.world.runtime.service.export(p.place)["jobs"]]
    erase(p, run.way, run.words)
    if run.way not in PURGING:
        # Time passes again, past the Undo of the edits (the sweep erases what they replaced) but not
        # past the retention of the summary no app read: forgetting what its job taught erased it
        # (issue 38, item 24). (After the person's erasure everything must be gone already: no sweep.)
        later(p, minutes=16)
        p.world.runtime.service.sweep()
    assert store.settle(30)  # what the erasure leaves to clean off the request's path
    erased = list(run.erased.values())
    run.findings["stemmer"], run.findings["recall cache"] = in_process(p, run)
    run.findings["tables"] = words_in_tables(engine, erased, decrypt=decrypt)
    if database is not None:
        run.findings["files"] = words_in_files(database, erased, "app open")
    else:
        run.findings["files"] = words_in_postgres_files(engine, erased, "after a CHECKPOINT", since=started)
    if run.way in PURGING:
        run.findings["owner rows"] = owner_rows(engine, run.way)
    run.findings["pages"] = [f"{label} shows {w!r}" for label, answer in reads(p, ids, erased, jobs)
                             for w in erased if holds(shown(label, answer), w)]
    engine.dispose()
    if database is not None:
        run.findings["files"] += words_in_files(database, erased, "engine disposed")
    replays = []
    answered = model_answer(run.words)
    server.script(answered)  # should a replayed consolidation ask the model again
    for k in p.keyed:
        answer = p.raw.open(PERSON + k.path, method=k.method, json=k.body,
                            headers=p.world.auth(**{"Idempotency-Key": k.key}))
        body = answer.get_data().lower()
        if run.way in PURGING:
            # Nothing that names the person is kept after their erasure, not even which requests
            # were seen: a request sent again is a new one. It may answer what it brings itself
            # (its own body, and the model's answer to it), never anything kept from before.
            if answer.headers.get("Idempotent-Replayed"):
                replays.append(f"{k.key} was replayed from a receipt kept after the erasure")
            brought = json.dumps(k.body).lower() + (answered.lower() if k.path == "/consolidate" else "")
            replays += [f"{k.key} ({answer.status_code}) returned {w!r}, which it did not bring" for w in erased
                        if holds(body, w) and not holds(brought.encode(), w)]
            continue
        replays += [f"replay of {k.key} ({answer.status_code}) returned {w!r}" for w in erased if holds(body, w)]
    server.replies.clear()
    run.findings["replays"] = replays
    run.findings["server errors"] = [f"{m} {path} answered {s}" for m, path, s in p.world.recorder.seen if s >= 500]
