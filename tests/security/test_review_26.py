"""Review of issue 26 (attacks on its promises). Each test here failed on the code under review."""

from __future__ import annotations

import socket
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from portal.adapters.cipher import FernetCipher, generate_key
from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.rotation import RotationError, rotate_keys
from portal.bootstrap import build_runtime
from portal.config import ConfigError, load_config
from portal.domain.errors import Unavailable
from portal.domain.types import Place, Source

from ..api.conftest import API, build_world
from ..api.test_consolidate import facts
from ..fakes.llm_server import FakeLLMServer
from .scans import words_in_files, words_in_tables

STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def engine_for(store: str, request: pytest.FixtureRequest) -> Engine:
    return request.getfixturevalue("sqlite_engine" if store == "sqlite" else "pg_engine")


@pytest.mark.parametrize("store", STORES)
def test_undo_after_the_sweep_does_not_take_back_an_older_write(
        store: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The assistant wrote A then corrected it to B; the person edits B to C in the portal. Once the
    Undo of that edit is over, B is erased by the sweep. An Undo now (portal, API or MCP) must say
    there is nothing to undo; it brings back A instead, and the person's own C is gone for good."""
    world = build_world(engine_for(store, request), tmp_path, env={"MEMORY_ENCRYPTION_KEYS": generate_key()})
    service, place = world.runtime.service, Place("ada", world.tenant_a)
    memory = service.remember(place, "Drinks oolong tea", sources=(Source("api"),)).memory
    service.update(place, memory.id, text="Drinks green tea", sources=(Source("api"),))  # the assistant
    service.update(place, memory.id, text="Drinks black tea", sources=(Source("portal"),))  # the person
    base = service.clock
    service.clock = lambda: base() + timedelta(minutes=16)
    assert service.sweep().revisions == 1
    answer = world.raw().post(f"{API}/people/ada/memories/{memory.id}/undo", headers=world.auth())
    assert service.get(place, memory.id).text == "Drinks black tea", answer.get_json()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Forwarder:
    """A TCP forwarder to PostgreSQL that is started late: the database 'comes up' after the app."""

    def __init__(self, port: int, target: tuple[str, int] | str) -> None:
        self.port, self.target = port, target
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def start(self) -> None:
        self.server.bind(("127.0.0.1", self.port))
        self.server.listen()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if isinstance(self.target, str):  # a unix socket
                upstream = socket.socket(socket.AF_UNIX)
                upstream.connect(self.target)
            else:
                upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()


@pytest.mark.postgres
def test_a_process_with_a_wrong_key_that_starts_before_the_database_answers_never_writes(
        pg_engine: Engine, tmp_path: Path) -> None:
    """A process with another key that starts while PostgreSQL is still coming up starts (it answers
    /readyz 503 meanwhile), but makes the keys check before its first transaction and refuses every
    one: it never writes text no other process can read."""
    right, wrong = generate_key(), generate_key()
    url = pg_engine.url
    good = build_runtime(load_config({"MEMORY_INSTANCE_PATH": str(tmp_path / "a"), "MEMORY_EMBEDDER": "none",
                                      "MEMORY_ENCRYPTION_KEYS": right}), engine=pg_engine, llm=None)
    tenant = good.tenants.create("acme").id
    good.service.remember(Place("ada", tenant), "Lives in Leeds")  # the probe is written with `right`
    port = closed_port()
    socket_dir = url.query.get("host") or url.host or ""
    target: tuple[str, int] | str = (f"{socket_dir}/.s.PGSQL.{url.port or 5432}" if str(socket_dir).startswith("/")
                                     else (url.host or "127.0.0.1", url.port or 5432))
    forwarder = Forwarder(port, target)
    late = url.set(host="127.0.0.1", port=port, query={})
    bad_engine = make_engine(late.render_as_string(hide_password=False))
    try:
        try:
            bad = build_runtime(load_config({"MEMORY_INSTANCE_PATH": str(tmp_path / "b"), "MEMORY_EMBEDDER": "none",
                                             "MEMORY_ENCRYPTION_KEYS": wrong}),
                                engine=bad_engine, llm=None)
        except ConfigError:
            return  # refused at start: what the issue asks
        forwarder.start()  # the database answers now: the check is made before the first transaction
        with pytest.raises(Unavailable):
            bad.service.remember(Place("bob", tenant), "Lives in York")
        with pytest.raises(Unavailable):  # and again: it never lets a transaction through
            bad.service.list(Place("ada", tenant), limit=10)
        assert good.service.list(Place("bob", tenant), limit=10).items == []
    finally:
        bad_engine.dispose()
        forwarder.close()


def test_a_person_can_stop_encrypt_plaintext_with_a_memory_shaped_like_a_token(tmp_path: Path,
                                                                               sqlite_engine: Engine) -> None:
    """On a database written without keys, `rotate-keys --encrypt-plaintext` tells plain text from a
    token by its shape. A person's memory whose words have that shape (any text a write keeps) is
    taken for a token: the run stops, and no database with such a memory can switch to encryption."""
    plain = build_runtime(load_config({"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none"}),
                          engine=sqlite_engine, llm=None)
    tenant = plain.tenants.create("acme").id
    shaped = FernetCipher.from_env_value(generate_key()).encrypt("anything")  # e.g. pasted by the person as a note
    plain.service.remember(Place("ada", tenant), shaped)
    plain.service.remember(Place("bob", tenant), "Lives in Leeds")
    keyed = build_runtime(load_config({"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none",
                                       "MEMORY_ENCRYPTION_KEYS": generate_key()}),
                          engine=sqlite_engine, llm=None, check_keys=False)
    assert keyed.store.cipher is not None
    try:
        rotate_keys(keyed.store, keyed.store.cipher, encrypt_plaintext=True)
    except RotationError as exc:
        pytest.fail(f"a person's memory stops the switch to encryption: {exc}")


def test_an_interrupted_encrypt_plaintext_is_not_taken_for_an_encrypted_database(tmp_path: Path,
                                                                                sqlite_engine: Engine) -> None:
    """`rotate-keys --encrypt-plaintext` is resumable; stopped half way, the keys check samples one
    memory, finds it encrypted, writes its probe, and the app serves a database still half in the
    clear (every later start passes too): those people's memories cannot be read."""
    plain = build_runtime(load_config({"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none"}),
                          engine=sqlite_engine, llm=None)
    tenant = plain.tenants.create("acme").id
    for owner in ("ann", "bea", "cid"):
        plain.service.remember(Place(owner, tenant), f"{owner} lives in Leeds")
    env = {"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none", "MEMORY_ENCRYPTION_KEYS": generate_key()}
    keyed = build_runtime(load_config(env), engine=sqlite_engine, llm=None, check_keys=False)

    def stop(_: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rotate_keys(keyed.store, keyed.store.cipher, batch=1, progress=stop, encrypt_plaintext=True)
    try:
        app = build_runtime(load_config(env), engine=sqlite_engine, llm=None)
    except ConfigError:
        return  # refused: what the check is for
    for owner in ("ann", "bea", "cid"):
        app.service.list(Place(owner, tenant), limit=10)  # raises for the memories still in the clear


def test_a_plaintext_database_whose_first_memory_looks_like_a_token_passes_the_keys_check(
        tmp_path: Path, sqlite_engine: Engine) -> None:
    """The keys check decides a database without a probe is encrypted from one memory's shape: a
    person's token-shaped words make a process with keys start on a database written in the clear."""
    plain = build_runtime(load_config({"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none"}),
                          engine=sqlite_engine, llm=None)
    tenant = plain.tenants.create("acme").id
    plain.service.remember(Place("ada", tenant), FernetCipher.from_env_value(generate_key()).encrypt("x"))
    plain.service.remember(Place("bob", tenant), "Lives in Leeds")
    env = {"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none", "MEMORY_ENCRYPTION_KEYS": generate_key()}
    try:
        app = build_runtime(load_config(env), engine=sqlite_engine, llm=None)
    except ConfigError:
        return
    app.service.list(Place("bob", tenant), limit=10)


def test_encrypt_plaintext_on_sqlite_leaves_no_words_in_the_write_ahead_log(tmp_path: Path, sqlite_engine: Engine) -> None:
    """`rotate-keys --encrypt-plaintext` rewrites every value, but does not end as an erasure does
    (SqlStore.after_erasure: checkpoint and truncate): the words stay in the -wal file."""
    plain = build_runtime(load_config({"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none"}),
                          engine=sqlite_engine, llm=None)
    tenant = plain.tenants.create("acme").id
    memory = plain.service.remember(Place("ada", tenant), "Walks to the qjandorf market").memory
    plain.service.update(Place("ada", tenant), memory.id, text="Walks to the zvimmelt market")
    env = {"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none", "MEMORY_ENCRYPTION_KEYS": generate_key()}
    keyed = build_runtime(load_config(env), engine=sqlite_engine, llm=None, check_keys=False)
    assert keyed.store.cipher is not None
    rotate_keys(keyed.store, keyed.store.cipher, encrypt_plaintext=True)
    assert keyed.store.settle(10)
    assert words_in_tables(sqlite_engine, ["qjandorf", "zvimmelt"]) == []  # the look after can pass
    database = sqlite_engine.url.database
    assert database
    assert words_in_files(Path(database), ["qjandorf", "zvimmelt"], "after --encrypt-plaintext") == []


def test_a_head_request_does_not_use_up_the_summary(sqlite_engine: Engine, tmp_path: Path) -> None:
    """The summary is handed over once, on a GET; a HEAD (run by the same handler) clears it and
    carries no body: the app never gets it (a GET that writes, against CONVENTIONS)."""
    with FakeLLMServer() as model:
        world = build_world(sqlite_engine, tmp_path, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0))
        model.script(facts("Has a cat", summary="Talked about the cat"))
        job_id = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                                  json={"transcript": [{"role": "user", "text": "I adopted a cat."}], "ref": "c1",
                                        "wait": False}).json["id"]
        world.runtime.service.run_job(job_id)
        try:
            head = world.raw().head(f"{API}/people/ada/jobs/{job_id}", headers=world.auth())
            assert head.status_code == 200 and head.get_data() == b""
            got = world.raw().get(f"{API}/people/ada/jobs/{job_id}", headers=world.auth()).json
            assert got["result"]["summary"] == "Talked about the cat", got
        finally:
            world.runtime.queue.close()
