"""Pausing learning, and how long what the assistant learns is kept, are the person's decisions
(issue 38, review1). An app may read them, and may pause learning (the person told the assistant
"stop learning about me": taking away, as its "don't use this" is), but never lift the person's
pause or change anything else they decided: 403 `person_decides`. Every change of the settings, by
anyone, writes a content-free audit entry in the same transaction. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from portal.domain.apps import app_of
from portal.domain.audit import AuditNote
from portal.domain.catalog import message
from portal.domain.errors import Refused
from portal.domain.types import Place

from ..api import conftest as api_fixtures
from ..api.conftest import API, World

# The worlds of tests/api (tenants A and B, keys of every kind, no 5xx allowed at teardown), on
# SQLite and PostgreSQL.
sqlite_engine = api_fixtures.sqlite_engine
make_world = api_fixtures.make_world
any_world = api_fixtures.any_world

PERSON = f"{API}/people/ada"
SETTINGS_ACTIONS = ("person.paused", "person.resumed", "person.learnt_days_set")


def settings_entries(world: World) -> list[tuple[str | None, str, str, str | None, str | None, str | None]]:
    return [(e.actor_id, e.actor_role, e.action, e.subject_owner_id, e.scope, e.reason_code)
            for e in world.runtime.store.audit_trail() if e.action in SETTINGS_ACTIONS]


def test_an_app_cannot_lift_the_persons_pause(any_world: World) -> None:
    world, place = any_world, Place("ada", any_world.tenant_a)
    person = world.runtime.service
    person.set_learnt_days(place, 30, audit=AuditNote("u-ada", "member", "person.learnt_days_set"))
    person.pause(place, audit=AuditNote("u-ada", "member", "person.paused"))
    for key in ("a", "a_without:erasure"):  # two apps of the tenant
        answer = world.raw().put(f"{PERSON}/settings", json={"paused": False}, headers=world.auth(key))
        assert answer.status_code == 403 and answer.mimetype == "application/problem+json", answer.json
        assert answer.json["code"] == "person_decides"
        assert answer.json["detail"] == message("refused.person_decides", "en")
        # It may still read the person's decision, which stands, and so does the rest of it.
        assert world.raw().get(f"{PERSON}/settings", headers=world.auth(key)).json == {"paused": True}
    assert person.is_paused(place) and person.decisions.learnt_days(place)[0] == 30
    # Refused whether or not the person is paused: an app never resumes learning.
    person.resume(place, audit=AuditNote("u-ada", "member", "person.resumed"))
    answer = world.raw().put(f"{PERSON}/settings", json={"paused": False}, headers=world.auth())
    assert (answer.status_code, answer.json["code"]) == (403, "person_decides")
    # The service refuses it to every app, whichever shell asks.
    key = world.runtime.api_keys.verify(world.keys["a"])
    assert key is not None
    app = person.for_app(app_of(key))
    with pytest.raises(Refused) as refused:
        app.resume(place)
    assert refused.value.code == "person_decides"
    with pytest.raises(Refused) as refused:
        app.set_learnt_days(place, 0)
    assert refused.value.code == "person_decides"
    assert person.decisions.learnt_days(place)[0] == 30


def test_an_app_may_pause_and_every_change_is_audited(any_world: World) -> None:
    world, place = any_world, Place("ada", any_world.tenant_a)
    person = world.runtime.service
    person.set_learnt_days(place, 30, audit=AuditNote("u-ada", "member", "person.learnt_days_set"))
    answer = world.raw().put(f"{PERSON}/settings", json={"paused": True}, headers=world.auth())
    assert answer.status_code == 200 and answer.json == {"paused": True}
    assert person.is_paused(place)
    assert person.decisions.learnt_days(place)[0] == 30  # a pause keeps what else the person decided
    # Pausing again changes nothing, and writes nothing.
    assert world.raw().put(f"{PERSON}/settings", json={"paused": True}, headers=world.auth()).json == {"paused": True}
    person.resume(place, audit=AuditNote("u-ada", "member", "person.resumed"))
    person.pause(place)  # a caller that names no one (a script, the operator's code): audited all the same
    tenant, key = world.tenant_a, world.key_ids["a"]
    assert settings_entries(world) == [
        ("u-ada", "member", "person.learnt_days_set", "ada", tenant, None),
        (key, "api_key", "person.paused", "ada", tenant, None),
        ("u-ada", "member", "person.resumed", "ada", tenant, None),
        (None, "operator", "person.paused", "ada", tenant, None),
    ]
