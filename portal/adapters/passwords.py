"""Password hashes for portal accounts: Argon2id (argon2-cffi's defaults), the same for every store."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

_hasher = PasswordHasher()
# Verified against when the e-mail is unknown, so a miss costs what a wrong password does.
_DUMMY = _hasher.hash("no such account, no such password")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


# What a disabled account holds instead of a hash: no password verifies against it.
DISABLED = "!disabled"


def verify_password(stored: str | None, password: str) -> bool:
    """Whether `password` matches the stored hash; with no hash (an unknown e-mail) the same work
    is done and the answer is False."""
    if stored is not None and stored.startswith(DISABLED):
        stored = None  # the same work as for an unknown e-mail, then False
    try:
        _hasher.verify(stored or _DUMMY, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False
    return stored is not None
