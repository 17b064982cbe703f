"""Fixtures of the command-line tests."""

from __future__ import annotations

import pytest
from argon2 import PasswordHasher

from portal.adapters import passwords as passwords_module


@pytest.fixture
def cheap_password_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Argon2id at its lowest cost for a test that runs the commands in this process and is not
    about the cost of a hash (the production cost takes a few tenths of a second per account).
    Hashes still go through argon2 and carry their parameters, so a password is checked for real."""
    monkeypatch.setattr(passwords_module, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
