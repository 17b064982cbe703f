"""REVIEW (review1, issue 38): an attacker's review of what landed for issue 38. Each test here
reproduces a finding and FAILS on the code as reviewed; none of them is fixed here (see the
report). On SQLite and PostgreSQL where storage is concerned.

- Item 17: an app whose words meet a memory the person withheld from it is answered the withheld
  memory's own revision, channel and creation time, besides its id.
- Item 0: a conversation's `ref` is claimed for the person, not for the app that sent it: another
  app's conversation of the same ref is answered `already` and never learnt, and a paused app's
  consolidation burns the ref for every app.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from portal.adapters.llm import OpenAICompatibleLLM
from portal.domain.apps import app_of
from portal.domain.types import Place

from ..api import conftest as api_fixtures
from ..api.conftest import API, World
from ..fakes.llm_server import FakeLLMServer

# The worlds of tests/api (tenants A and B, keys of every kind, no 5xx allowed at teardown).
sqlite_engine = api_fixtures.sqlite_engine
make_world = api_fixtures.make_world

PERSON = f"{API}/people/ada"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> World:
    return make_world(request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine"))


def call(world: World, method: str, path: str, body: Any = None, key: str = "a") -> tuple[int, Any]:
    response = world.raw().open(path, method=method, json=body, headers=world.auth(key))
    return response.status_code, response.get_json(silent=True)


# ------------------------------------------------------------------ item 17: what the answer tells


@pytest.mark.parametrize("how", ["remember", "tool"])
def test_an_app_meeting_a_withheld_memory_learns_nothing_of_it_but_its_id(world: World, how: str) -> None:
    """REVIEW finding (low): the app's repeat of words the person said "don't use" is answered with
    the app's own words under the memory's id (`drafts.as_said`), but also with the withheld
    memory's revision (how often the person corrected it), channel (whether the assistant learnt
    it in the background) and creation time (when it was first kept): the person's data about a
    memory the app may not receive. The answer should hold what the app itself just said, a
    fresh moment and a first revision, the id alone coming from the withheld memory."""
    place, person = Place("ada", world.tenant_a), world.runtime.service
    learnt = person.remember(place, "Sees a therapist on Mondays", origin="inferred", channel="background").memory
    person.update(place, learnt.id, text="Sees a therapist on Tuesdays")
    kept = person.update(place, learnt.id, text="Sees a therapist every Tuesday").memory
    person.set_use(place, kept.id, False)  # "don't use this", for every app
    assert (kept.revision, kept.channel) == (3, "background")

    if how == "remember":
        status, body = call(world, "POST", f"{PERSON}/memories", {"text": "sees a therapist EVERY tuesday"})
        assert status == 201, body
    else:
        status, body = call(world, "POST", f"{PERSON}/tools/remember",
                            {"arguments": {"text": "sees a therapist EVERY tuesday"}})
        assert status == 200 and body["ok"], body
    shown = body["memory"]
    assert shown["id"] == kept.id and shown["text"] == "sees a therapist EVERY tuesday"  # as designed
    # What the person keeps about that memory stays theirs:
    leaked = {name: shown[name] for name in ("revision", "channel", "created_at")
              if shown[name] == kept.to_json()[name]}
    assert leaked == {}, f"the answer carries the withheld memory's {sorted(leaked)}"


# ------------------------------------------------------------------ item 0: a conversation's ref


@pytest.fixture
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def llm_world(request: pytest.FixtureRequest, make_world: Callable[..., World], model: FakeLLMServer) -> World:
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    return make_world(engine, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0))


def learnt(*texts: str) -> str:
    return json.dumps({"facts": [{"text": t, "kind": "fact", "importance": 4} for t in texts], "summary": "a chat"})


def consolidate(world: World, key: str, ref: str, said: str) -> dict[str, Any]:
    status, body = call(world, "POST", f"{PERSON}/consolidate", {"transcript": said, "ref": ref}, key=key)
    assert status == 200, body
    return body  # type: ignore[no-any-return]


def test_each_app_has_its_own_conversations_refs(llm_world: World, model: FakeLLMServer) -> None:
    """REVIEW finding (medium-low, a key acting in another app's shadow): `consolidation_refs` are
    keyed by the person and the ref alone. Two apps of a tenant numbering their conversations alike
    ("conv-1"): the second app's conversation is answered `already` and nothing of it is learnt,
    silently; the answer tells that app that another app had a conversation "conv-1" with this
    person (a probe: any ref may be tried); and an app the person paused, whose consolidations are
    marked done and learn nothing, burns the ref for every other app too. Expected: a ref is the
    app's (claimed under the app's id and the ref), as `Jobs.get` keeps a job to the app that sent it."""
    w, place = llm_world, Place("ada", llm_world.tenant_a)
    writer, bot = "a", "a_only:consolidate"  # two keys of tenant A, named apart: two apps
    model.script(learnt("Has a cat called Miso"))
    assert consolidate(w, writer, "conv-1", "I adopted a cat called Miso.")["status"] == "done"
    model.script(learnt("Is training for a marathon in April"))
    other = consolidate(w, bot, "conv-1", "I am training for a marathon in April.")
    # the person paused the writer app; its conversation "conv-2" learns nothing (as designed)...
    writer_key = w.runtime.api_keys.verify(w.keys[writer])
    assert writer_key is not None
    w.runtime.service.set_app_control(place, app_of(writer_key).id, "paused")
    assert consolidate(w, writer, "conv-2", "I moved to Lyon.")["status"] == "paused"
    model.script(learnt("Plays the cello"))
    burnt = consolidate(w, bot, "conv-2", "I play the cello.")  # ...and the bot's own "conv-2"?
    kept = sorted(m.text for m in w.runtime.service.list(place).items)
    assert (other["status"], burnt["status"]) == ("done", "done"), (other, burnt, kept)
    assert kept == ["Has a cat called Miso", "Is training for a marathon in April", "Plays the cello"]
