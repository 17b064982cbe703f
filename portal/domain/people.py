"""The people around the memories: accounts (`User`), tenants, API keys and erasure requests, and
the rules a new account must meet. Plain values: every store of accounts (SQL, in memory, a third
party's) holds these and checks new accounts with `check_new_account`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from portal.domain.types import Place
from portal.inputs import is_valid_id, is_valid_text

ROLES = ("member", "staff", "admin")
LANGUAGES = ("en", "fr")
# memories:forget lets a model forget over MCP (its forget tool is offered only then).
PERMISSIONS = ("memories:read", "memories:write", "memories:forget", "consolidate", "erasure")
EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,255}\.[^@\s]{1,63}$")
MIN_PASSWORD = 10


@dataclass(frozen=True, slots=True)
class User:
    id: str
    email: str
    name: str
    role: str
    tenant_id: str
    owner_id: str
    # The portal's language the person chose (LANGUAGES), or None: none chosen, their browser's.
    language: str | None
    created_at: datetime
    last_visit_at: datetime | None
    session_epoch: int = 0
    # No password can open it (`Accounts.disable`); a new password enables it again.
    disabled: bool = False

    @property
    def place(self) -> Place:
        """Where this person's memories live: their owner id in their tenant."""
        return Place(self.owner_id, self.tenant_id)

    # flask-login's user protocol, without importing Flask here
    is_authenticated = True
    is_active = True
    is_anonymous = False

    def get_id(self) -> str:
        """What a sign-in session keeps: the account and the epoch it began in (see `People.session`)."""
        return f"{self.id}:{self.session_epoch}"


class AccountError(ValueError):
    """A refused account change, with a stable code."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def check_new_account(email: str, name: str, role: str, password: str, owner_id: str | None,
                      language: str | None) -> str:
    """The account's e-mail as it is kept (trimmed, lower case), or AccountError with the rule broken."""
    email = email.strip().lower()
    if not EMAIL.match(email):
        raise AccountError("invalid_email")
    if not name.strip() or len(name) > 200:
        raise AccountError("invalid_name")
    if role not in ROLES:
        raise AccountError("invalid_role")
    if language is not None and language not in LANGUAGES:  # None: no language chosen yet
        raise AccountError("invalid_language")
    check_password(password)
    if owner_id is not None and not is_valid_id(owner_id):
        raise AccountError("invalid_owner_id")
    return email


def check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise AccountError("password_too_short")


def check_language(language: str) -> None:
    if language not in LANGUAGES:
        raise AccountError("invalid_language")


@dataclass(frozen=True, slots=True)
class Tenant:
    id: str
    name: str
    ai_enabled: bool
    created_at: datetime
    learnt_days: int | None = None  # the default "forget what the assistant learns after N days"


class TenantExists(ValueError):
    code = "tenant_exists"


def check_tenant_name(name: str) -> str:
    """The tenant's name as it is kept (trimmed), or ValueError."""
    name = name.strip()
    if not name or len(name) > 200 or not is_valid_text(name):
        raise ValueError("a tenant needs a name of at most 200 characters")
    return name


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    tenant_id: str
    name: str | None
    prefix: str
    permissions: frozenset[str]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    def allows(self, permission: str) -> bool:
        return permission in self.permissions


@dataclass(frozen=True, slots=True)
class ErasureRequest:
    """A person's request to be erased (art. 17), open until staff complete it."""

    id: str
    tenant_id: str
    subject_owner_id: str
    subject_user_id: str | None
    ticket: str | None
    received_at: datetime
    requested_by: str
    state: str
    completed_at: datetime | None
    completed_by: str | None
    counts: dict[str, int] | None
