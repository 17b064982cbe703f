"""No answer carries an erased text (DESIGN §4, §11; CONVENTIONS: "stored answers holding text
that later erasures cannot find").

A hypothesis state machine drives the real JSON API (Flask test client, a fresh migrated SQLite
per example, no embedding model) through random remembers, updates, in-place updates, undos and
forgets, most with an Idempotency-Key, replays of earlier keyed requests, and reads (one memory,
its history, the list, recall — itself keyed sometimes, and replayed).

It keeps its own model of what must survive, from the spec alone: each memory's current wording
and the earlier wordings its history keeps. An update pushes the old wording into history; an
in-place update keeps no earlier text; undo takes back the last write (after a create it removes
the memory, after an update it brings back the previous wording and erases the undone one);
forget erases the memory and every revision. A text is erased once it is neither the current nor
a kept earlier wording of any memory; from then on no answer, read or replay, may contain it. A
replay may answer `{"redacted": true}` or 404, or show a wording that is still kept.

Texts are `note zqNNNN`, a number never used before in the example: no text can meet another as
a duplicate, and a token found in an answer names exactly one write.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy.engine import Engine
from werkzeug.test import TestResponse

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import upgrade

from ..api.conftest import API, World, build_world

PERSON = f"{API}/people/ada"
KEYED = st.sampled_from([True, True, True, False])  # most writes carry a key; shrinks towards keyed
PICK = st.integers(min_value=0, max_value=10_000)
# Deterministic and database-free for CI. Shrinking one failure takes about half a minute (each
# example is a fresh database and app); report_multiple_bugs=True shows every kind of leak at once,
# each shrunk, in a few minutes.
SETTINGS = settings(
    max_examples=40, stateful_step_count=25, deadline=None, derandomize=True, database=None,
    phases=[Phase.explicit, Phase.generate, Phase.shrink], report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow],
)
KINDS = ("remember", "update", "undo", "forget", "recall", "read")


class ErasedTextShown(AssertionError):
    """An answer showed a text the spec says is erased."""


# One type per kind of answer, replayed or not: the failure's name says which, and with
# report_multiple_bugs hypothesis tells these apart (by type) and shrinks each one.
SHOWN = {(kind, replayed): type(f"ErasedTextShownBy{'Replayed' if replayed else ''}{kind.title()}", (ErasedTextShown,), {})
         for kind in KINDS for replayed in (False, True)}


@dataclass
class Kept:
    """What the spec says a memory holds: its wording now, earlier wordings oldest first."""

    text: str
    history: list[str] = field(default_factory=list)
    last_op: str = "create"


@dataclass(frozen=True)
class Sent:
    """A keyed request as first sent (to send again verbatim) and what it answered then."""

    step: int
    kind: str
    method: str
    path: str
    body: Any
    key: str
    answer: str


def memory_path(memory_id: str) -> str:
    return f"{PERSON}/memories/{quote(memory_id, safe='')}"


class StaleTextMachine(RuleBasedStateMachine):
    """The API against the spec's model of kept texts; the test gives `open_world`."""

    memories = Bundle("memories")
    open_world: Callable[[], tuple[World, Engine]]

    def __init__(self) -> None:
        super().__init__()
        self.world, self.engine = type(self).open_world()
        self.raw = self.world.raw()
        self.kept: dict[str, Kept] = {}
        self.written: dict[str, int] = {}  # token -> the step that sent it
        self.erased_by: dict[str, str] = {}  # token -> why it counts as erased
        self.fresh: list[tuple[str, str | None]] = []  # (token, memory id) erased by the last step
        self.keyed: list[Sent] = []
        self.steps: list[str] = []
        self.numbers, self.keys = count(1), count(1)

    def teardown(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ the model and the property

    def text(self) -> tuple[str, str]:
        token = f"zq{next(self.numbers):04d}"
        self.written[token] = len(self.steps) + 1
        return token, f"note {token}"

    def live(self) -> set[str]:
        return {token for kept in self.kept.values() for token in (kept.text, *kept.history)}

    def settle(self, before: set[str], memory_id: str | None) -> None:
        """Note which texts the last step erased: for the message, and for the sweep after it."""
        now = self.live()
        for token, step in self.written.items():
            if token not in now and token not in self.erased_by:
                self.erased_by[token] = f"erased by step {len(self.steps)}" if token in before else \
                    f"never kept (its write, step {step}, did not succeed)"
                if token in before:
                    self.fresh.append((token, memory_id))

    def check(self, response: TestResponse, kind: str, replayed: bool = False) -> None:
        """The property: the answer holds no erased text."""
        body = response.get_data(as_text=True)
        leaked = sorted(token for token in self.erased_by if token in body)
        if leaked:
            raise SHOWN[kind, replayed](
                f"erased text in the answer to step {len(self.steps)} ({self.steps[-1]}):\n"
                + "".join(f"  'note {t}', {self.erased_by[t]}\n" for t in leaked)
                + f"  answer: HTTP {response.status_code}, Idempotent-Replayed: "
                f"{response.headers.get('Idempotent-Replayed', 'absent')}, {body[:600]}\n" + self.story())

    def diverged(self, what: str, response: TestResponse) -> NoReturn:
        raise AssertionError(f"the API and the spec's model disagree: {what}\n  answer: HTTP {response.status_code} "
                             f"{response.get_data(as_text=True)[:600]}\n" + self.story())

    def story(self) -> str:
        return "steps:\n" + "\n".join(f"  {n}. {s}" for n, s in enumerate(self.steps, 1))

    def send(self, kind: str, label: str, method: str, path: str, body: Any = None, keyed: bool = False) -> TestResponse:
        headers = self.world.auth()
        key = f"k-{next(self.keys)}" if keyed and method != "GET" else None
        if key:
            headers["Idempotency-Key"] = key
            label += f" [Idempotency-Key {key}]"
        response = self.raw.open(path, method=method, json=body, headers=headers)
        self.steps.append(f"{label} -> HTTP {response.status_code}")
        assert response.status_code < 500, f"{self.steps[-1]}: {response.get_data(as_text=True)}"
        if key:
            self.keyed.append(Sent(len(self.steps), kind, method, path, body, key, response.get_data(as_text=True)))
        return response

    def resend(self, sent: Sent, why: str = "") -> None:
        headers = self.world.auth(**{"Idempotency-Key": sent.key})
        response = self.raw.open(sent.path, method=sent.method, json=sent.body, headers=headers)
        self.steps.append(f"{why}REPLAY of step {sent.step} ({sent.method} {sent.path} {json.dumps(sent.body)} "
                          f"[Idempotency-Key {sent.key}]) -> HTTP {response.status_code}")
        assert response.status_code < 500, f"{self.steps[-1]}: {response.get_data(as_text=True)}"
        self.check(response, sent.kind, replayed=True)

    # ------------------------------------------------------------------ writes

    @initialize(target=memories)
    def first_memory(self) -> Any:
        return self.remember(keyed=True)

    @rule(target=memories, keyed=KEYED)
    def remember(self, keyed: bool) -> Any:
        before = self.live()
        token, text = self.text()
        response = self.send("remember", f"remember {text!r}", "POST", f"{PERSON}/memories", {"text": text}, keyed)
        answer: dict[str, Any] = response.json or {}
        made = str(answer["memory"]["id"]) if response.status_code == 201 else None
        if made is not None:
            self.steps[-1] += f", id {made}"
            if made in self.kept:  # met a duplicate (not expected with unique texts): replaced its wording
                self.kept[made].history.append(self.kept[made].text)
                self.kept[made].text, self.kept[made].last_op = token, "replace"
            elif not answer.get("reinforced"):
                self.kept[made] = Kept(token)
        self.settle(before, made)
        self.check(response, "remember")
        return made if made is not None else multiple()

    @rule(memory=memories, keyed=KEYED, in_place=st.booleans())
    def update(self, memory: str, keyed: bool, in_place: bool) -> None:
        before, kept = self.live(), self.kept.get(memory)
        token, text = self.text()
        body: dict[str, Any] = {"text": text, "in_place": True} if in_place else {"text": text}
        name = "in-place update" if in_place else "update"
        response = self.send("update", f"{name} {memory} to {text!r}", "PATCH", memory_path(memory), body, keyed)
        if response.status_code == 200:
            if kept is None:
                self.diverged(f"{name} of {memory}, gone by the spec, succeeded", response)
            kept.history = [] if in_place else [*kept.history, kept.text]  # in place: no earlier text survives
            kept.text, kept.last_op = token, "in_place" if in_place else "update"
        elif response.status_code == 404 and kept is not None:
            self.diverged(f"{name} of {memory}, kept by the spec, answered 404", response)
        self.settle(before, memory)
        self.check(response, "update")

    @rule(memory=memories, keyed=KEYED)
    def undo(self, memory: str, keyed: bool) -> None:
        before, kept = self.live(), self.kept.get(memory)
        response = self.send("undo", f"undo {memory}", "POST", f"{memory_path(memory)}/undo", None, keyed)
        if response.status_code == 200:
            restored = (response.json or {}).get("memory")
            if kept is None:
                self.diverged(f"undo of {memory}, gone by the spec, succeeded", response)
            if restored is None:
                if kept.last_op != "create":
                    self.diverged(f"undo removed {memory}, whose last write was {kept.last_op}", response)
                del self.kept[memory]
            elif not kept.history:
                self.diverged(f"undo of {memory} restored a wording the spec does not keep", response)
            else:
                kept.text, kept.last_op = kept.history.pop(), "undo"  # the undone wording is erased
                if restored.get("text") != f"note {kept.text}":
                    self.diverged(f"undo of {memory} should bring back 'note {kept.text}'", response)
        elif response.status_code == 404 and kept is not None:
            self.diverged(f"undo of {memory}, kept by the spec, answered 404", response)
        self.settle(before, memory)
        self.check(response, "undo")

    @rule(memory=memories, keyed=KEYED)
    def forget(self, memory: str, keyed: bool) -> None:
        before = self.live()
        response = self.send("forget", f"forget {memory}", "DELETE", memory_path(memory), None, keyed)
        if (response.status_code == 204) != (memory in self.kept):
            self.diverged(f"forget of {memory} ({'kept' if memory in self.kept else 'gone'} by the spec)", response)
        self.kept.pop(memory, None)
        self.settle(before, memory)
        self.check(response, "forget")

    @precondition(lambda self: bool(self.keyed))
    @rule(pick=PICK)
    def replay(self, pick: int) -> None:
        self.resend(self.keyed[pick % len(self.keyed)])

    # ------------------------------------------------------------------ reads

    # One rule for every read, so that reads do not crowd out the writes that erase.
    @rule(what=st.sampled_from(["get", "history", "list", "recall"]), memory=memories, pick=st.none() | PICK,
          keyed=st.booleans())
    def read(self, what: str, memory: str, pick: int | None, keyed: bool) -> None:
        """One memory, its history, the list, or recall of every note or of one token (maybe erased)."""
        if what == "get":
            response = self.send("read", f"GET memory {memory}", "GET", memory_path(memory))
        elif what == "history":
            response = self.send("read", f"GET history of {memory}", "GET", f"{memory_path(memory)}/history")
        elif what == "list":
            response = self.send("read", "GET list", "GET", f"{PERSON}/memories?limit=100")
        else:
            tokens = list(self.written)
            query = "note" if pick is None or not tokens else tokens[pick % len(tokens)]
            body = {"query": query, "limit": 100}
            response = self.send("recall", f"recall {query!r}", "POST", f"{PERSON}/recall", body, keyed)
        self.check(response, "recall" if what == "recall" else "read")

    @invariant()
    def erased_stays_erased(self) -> None:
        """Right after a step erases a text: replay every keyed request whose answer showed it, read
        its memory's history, recall it by its token (the random steps may take long to get there)."""
        fresh, self.fresh = self.fresh, []
        for token, memory in fresh:
            for sent in self.keyed:
                if token in sent.answer:
                    self.resend(sent, why="(sweep) ")
            if memory is not None:
                self.check(self.send("read", f"(sweep) GET history of {memory}", "GET",
                                     f"{memory_path(memory)}/history"), "read")
            self.check(self.send("read", f"(sweep) recall {token!r}", "POST", f"{PERSON}/recall",
                                 {"query": token, "limit": 100}), "recall")


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SQLite file migrated by Alembic; each example works on a fresh copy of it."""
    path = tmp_path_factory.mktemp("stale-template") / "memory.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()
    return path


@pytest.fixture
def open_world(migrated: Path, tmp_path: Path) -> Iterator[Callable[[], tuple[World, Engine]]]:
    """A factory of worlds, each on its own fresh SQLite copy; no world may have answered a 5xx."""
    numbers = count()
    recorders = []

    def make() -> tuple[World, Engine]:
        folder = tmp_path / f"example{next(numbers)}"
        folder.mkdir()
        shutil.copyfile(migrated, folder / "memory.db")
        engine = make_engine(f"sqlite:///{folder / 'memory.db'}")
        world = build_world(engine, folder)
        recorders.append(world.recorder)
        return world, engine

    yield make
    errors = [seen for recorder in recorders for seen in recorder.seen if seen[2] >= 500]
    assert not errors, f"server errors: {errors}"


def test_no_answer_ever_carries_an_erased_text(open_world: Callable[[], tuple[World, Engine]]) -> None:
    machine = type("NoStaleText", (StaleTextMachine,), {"open_world": staticmethod(open_world)})
    run_state_machine_as_test(machine, settings=SETTINGS)
