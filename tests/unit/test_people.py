"""A person's own account (portal.services.people): sign-in records the visit, a session ends with
sign-out and a new password, the language is one the portal speaks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from portal.adapters.memory.records import InMemoryRecords
from portal.domain.people import User
from portal.services.people import People

from ..expect import refused

PASSWORD = "correct horse battery"  # noqa: S105 - a test account's
AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def records() -> InMemoryRecords:
    return InMemoryRecords()


@pytest.fixture
def ada(records: InMemoryRecords) -> User:
    tenant = records.tenants.create("Acme")
    return records.accounts.create("ada@example.com", "Ada", tenant.id, "member", PASSWORD)


def test_sign_in_records_the_visit_and_a_wrong_password_does_not(records: InMemoryRecords, ada: User) -> None:
    people = People(records, clock=lambda: AT)
    assert people.sign_in("ada@example.com", "wrong password") is None
    assert records.accounts.get(ada.id).last_visit_at is None  # type: ignore[union-attr]
    signed = people.sign_in(" ADA@example.com", PASSWORD)
    assert signed is not None and signed.id == ada.id and signed.last_visit_at == AT
    assert people.sign_in("nobody@example.com", PASSWORD) is None


def test_a_session_opens_until_sign_out_or_a_new_password(records: InMemoryRecords, ada: User) -> None:
    people = People(records)
    first = ada.get_id()
    assert people.session(first) == ada
    people.sign_out(ada)
    assert people.session(first) is None
    now = records.accounts.get(ada.id)
    assert now is not None and people.session(now.get_id()) == now
    records.accounts.set_password(ada.id, "another long password")
    assert people.session(now.get_id()) is None
    for forged in ("", "garbage", ada.id, f"{ada.id}:x", f"{ada.id}:-1", f"{ada.id}:99", "no-such:0"):
        assert people.session(forged) is None


def test_the_language_is_one_the_portal_speaks(records: InMemoryRecords, ada: User) -> None:
    people = People(records)
    people.set_language(ada, "fr")
    with refused("invalid_language"):
        people.set_language(ada, "xx")
    assert records.accounts.get(ada.id).language == "fr"  # type: ignore[union-attr]
