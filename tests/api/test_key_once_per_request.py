"""The API key a request's token stands for is read once per request (portal.api.keys: the rate
limit's bucket and the permission check share it), and never longer: a key revoked between two
requests is refused by the second, even when both run inside one application context (a test, a
command or a host serving the app in process keeps one pushed: Flask's `g` then outlives the
request)."""

from __future__ import annotations

from portal.adapters.sql.api_keys import ApiKeys

from .conftest import World

MEMORIES = "/api/v1/people/ada/memories"


def test_a_key_revoked_between_two_requests_of_one_app_context_is_refused(world: World) -> None:
    client = world.raw()
    with world.app.app_context():
        assert client.get(MEMORIES, headers=world.auth()).status_code == 200
        ApiKeys(world.runtime.engine).revoke(world.key_ids["a"])
        refused = client.get(MEMORIES, headers=world.auth())
    assert refused.status_code == 401 and refused.json["code"] == "unauthorized"


def test_each_request_of_one_app_context_is_its_own_keys(world: World) -> None:
    client = world.raw()
    with world.app.app_context():
        made = client.post(MEMORIES, json={"text": "Paddles a kayak on Sundays"}, headers=world.auth("a"))
        assert made.status_code == 201
        other_tenant = client.get(MEMORIES, headers=world.auth("b"))
        read_only = client.post(MEMORIES, json={"text": "Drinks green tea"}, headers=world.auth("a_read"))
    assert other_tenant.status_code == 200 and other_tenant.json["items"] == []  # tenant B's Ada: nobody
    assert read_only.status_code == 403
    assert world.count() == 1
