"""API keys on SQLite and PostgreSQL: shown once, stored as a hash only, checked in constant time,
scoped to a tenant with permissions, revocable, and refused when anything about them is off."""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, event, select, update
from sqlalchemy.engine import Engine

from portal.adapters import keys as key_tokens
from portal.adapters.sql.api_keys import ApiKeys
from portal.adapters.sql.tables import api_keys, tenants
from portal.adapters.sql.tenants import Tenants
from portal.domain.people import PERMISSIONS, ApiKey


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> Engine:
    return request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")


@pytest.fixture
def keys(engine: Engine) -> ApiKeys:
    return ApiKeys(engine)


@pytest.fixture
def tenant_id(engine: Engine) -> str:
    return Tenants(engine).create("Acme").id


def stored_row(engine: Engine, key_id: str) -> dict[str, Any]:
    with engine.connect() as conn:
        return dict(conn.execute(select(api_keys).where(api_keys.c.id == key_id)).mappings().one())


def test_a_new_key_verifies_to_its_tenant_and_permissions(keys: ApiKeys, tenant_id: str) -> None:
    key, token = keys.create(tenant_id, ["memories:read", "memories:write"], name="  assistant backend ")
    tag, key_id, secret = token.split("_", 2)
    assert tag == "mp" and key_id == key.id and len(secret) >= 40
    assert key.tenant_id == tenant_id and key.name == "assistant backend"
    assert key.permissions == frozenset({"memories:read", "memories:write"})
    assert token.startswith(key.prefix) and key.prefix in f"mp_{key.id}" and len(key.prefix) <= 16
    assert key.last_used_at is None and key.revoked_at is None

    found = keys.verify(token)
    assert found is not None
    assert (found.id, found.tenant_id, found.name, found.permissions) == (key.id, tenant_id, key.name, key.permissions)
    assert found.allows("memories:write") and not found.allows("erasure")
    assert found.last_used_at is not None


def test_each_key_is_different_and_verifies_only_as_itself(keys: ApiKeys, tenant_id: str) -> None:
    first, first_token = keys.create(tenant_id, ["consolidate"])
    second, second_token = keys.create(tenant_id, ["erasure"])
    assert first.id != second.id and first_token != second_token
    assert keys.verify(first_token).id == first.id  # type: ignore[union-attr]
    assert keys.verify(second_token).id == second.id  # type: ignore[union-attr]
    # The first key's id with the second key's secret is no key at all.
    crossed = f"mp_{first.id}_{second_token.split('_', 2)[2]}"
    assert keys.verify(crossed) is None


def test_only_a_hash_of_the_secret_is_stored(engine: Engine, keys: ApiKeys, tenant_id: str) -> None:
    key, token = keys.create(tenant_id, ["memories:read"], name="backend")
    secret = token.split("_", 2)[2]
    row = stored_row(engine, key.id)
    assert row["secret_hash"] == hashlib.sha256(secret.encode()).hexdigest()
    for value in row.values():
        assert secret not in str(value) and token not in str(value)
    # Nothing handed back after creation carries the secret or its hash either.
    assert "secret_hash" not in ApiKey.__dataclass_fields__
    for listed in keys.list():
        assert secret not in repr(listed) and row["secret_hash"] not in repr(listed)
    if engine.dialect.name == "sqlite":
        database = Path(engine.url.database or "")
        files = [f for f in (database, database.with_name(database.name + "-wal")) if f.exists()]
        assert database in files
        assert all(secret.encode() not in f.read_bytes() for f in files)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # last character of the secret changed
        lambda t: "_".join(t.split("_", 2)[:2]) + "_" + "x" * 43,  # another secret
        lambda t: t[:-3],  # secret cut short
        lambda t: t + "A",  # secret made longer
        lambda t: "mp_" + "0" * 32 + "_" + t.split("_", 2)[2],  # unknown id, real secret
    ],
)
def test_a_wrong_secret_or_unknown_id_is_refused(keys: ApiKeys, tenant_id: str, mangle: Any) -> None:
    _, token = keys.create(tenant_id, ["memories:read"])
    wrong = mangle(token)
    assert wrong != token
    assert keys.verify(wrong) is None
    assert keys.verify(token) is not None


@pytest.mark.parametrize(
    "token",
    [
        "", " ", "mp", "mp_", "mp__", "Bearer x", "mp_abc_def", "sk_" + "a" * 32 + "_" + "b" * 43,
        "mp_" + "A" * 32 + "_" + "b" * 43,  # id not lower-case hex
        "mp_" + "a" * 31 + "_" + "b" * 43,  # id too short
        "mp_" + "a" * 32 + "_" + "b" * 10,  # secret too short to be one of ours
        "mp_" + "a" * 32 + "_" + "b" * 5000,  # absurdly long
        "mp_" + "a" * 32 + "_" + "b c" * 20,  # not url-safe
        "mp_" + "a" * 32 + "_" + "é" * 43,
        "mp_" + "a" * 32 + "_" + "' OR 1=1 --" * 3,
    ],
)
def test_a_malformed_token_is_refused(keys: ApiKeys, tenant_id: str, token: str) -> None:
    keys.create(tenant_id, ["memories:read"])
    assert keys.verify(token) is None


def test_the_secret_is_compared_in_constant_time_whether_or_not_the_id_exists(
    keys: ApiKeys, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, token = keys.create(tenant_id, ["memories:read"])
    stored = hashlib.sha256(token.split("_", 2)[2].encode()).hexdigest()
    calls: list[tuple[Any, Any]] = []
    real_compare = hmac.compare_digest

    def spying_compare(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real_compare(a, b)

    monkeypatch.setattr(key_tokens.hmac, "compare_digest", spying_compare)
    assert keys.verify(token) is not None
    assert calls == [(stored.encode(), stored.encode())]
    calls.clear()
    assert keys.verify(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert len(calls) == 1 and calls[0][0] == stored.encode() and calls[0][1] != stored.encode()
    calls.clear()
    # An unknown id still costs a comparison, so a miss does not answer faster than a wrong secret.
    assert keys.verify("mp_" + "0" * 32 + "_" + token.split("_", 2)[2]) is None
    assert len(calls) == 1


def test_a_revoked_key_is_refused_and_stays_listed_as_revoked(keys: ApiKeys, tenant_id: str) -> None:
    key, token = keys.create(tenant_id, ["erasure"])
    assert keys.verify(token) is not None
    assert keys.revoke(key.id) is True
    assert keys.verify(token) is None
    assert keys.revoke(key.id) is False  # already revoked
    assert keys.revoke("0" * 32) is False  # no such key
    (listed,) = keys.list(tenant_id)
    assert listed.id == key.id and listed.revoked_at is not None


def test_use_is_recorded_at_most_once_a_minute(engine: Engine, keys: ApiKeys, tenant_id: str) -> None:
    key, token = keys.create(tenant_id, ["memories:read"])
    assert stored_row(engine, key.id)["last_used_at"] is None
    keys.verify(token)
    first = stored_row(engine, key.id)["last_used_at"]
    assert first is not None
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        second = keys.verify(token)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    # The second request within the minute is a read only: no UPDATE reaches the database.
    assert second is not None and second.last_used_at == first
    assert statements and not [s for s in statements if s.lstrip().upper().startswith("UPDATE")]
    assert stored_row(engine, key.id)["last_used_at"] == first
    # A use more than a minute later is recorded again.
    earlier = first - timedelta(minutes=2)
    with engine.begin() as conn:
        conn.execute(update(api_keys).where(api_keys.c.id == key.id).values(last_used_at=earlier))
    again = keys.verify(token)
    assert again is not None and again.last_used_at is not None and again.last_used_at > earlier
    assert stored_row(engine, key.id)["last_used_at"] == again.last_used_at


def test_list_filters_by_tenant_and_shows_every_key(engine: Engine, keys: ApiKeys, tenant_id: str) -> None:
    other = Tenants(engine).create("Globex").id
    mine, _ = keys.create(tenant_id, ["memories:read"], name="one")
    theirs, _ = keys.create(other, PERMISSIONS)
    assert {k.id for k in keys.list()} == {mine.id, theirs.id}
    assert [k.id for k in keys.list(tenant_id)] == [mine.id]
    (listed,) = keys.list(other)
    assert listed.permissions == frozenset(PERMISSIONS) and listed.name is None
    assert keys.list("no-such-tenant") == []


def test_unknown_permission_no_permission_and_unknown_tenant_are_refused(
    engine: Engine, keys: ApiKeys, tenant_id: str
) -> None:
    with pytest.raises(ValueError, match="'memories:delete'"):
        keys.create(tenant_id, ["memories:read", "memories:delete"])
    with pytest.raises(ValueError, match="permission"):
        keys.create(tenant_id, [])
    with pytest.raises(ValueError, match="tenant"):
        keys.create("no-such-tenant", ["memories:read"])
    assert keys.list() == []


def test_keys_go_with_their_tenant(engine: Engine, keys: ApiKeys, tenant_id: str) -> None:
    _, token = keys.create(tenant_id, ["memories:read"])
    with engine.begin() as conn:
        conn.execute(delete(tenants).where(tenants.c.id == tenant_id))
    assert keys.list() == []
    assert keys.verify(token) is None
