"""The one family of errors the services raise. Each carries a stable `code` (never a sentence:
the catalog turns a code into words in the person's language), and each shell has one handler for
each of them: problem+json under /api, a page or an htmx fragment in the portal, a sentence and a
non-zero exit in the command line.

- `NotFound`: no such thing for this caller (another owner's or tenant's ids are not found either).
- `Conflict(actual_revision)`: a compare-and-set lost.
- `Refused(code)`: a change the service will not make (a rule, a pause, nothing to undo...).
- `InvalidArgument(code)` and `InvalidWhere`: an argument out of range, a place without an owner.
"""

from __future__ import annotations


class MemoryServiceError(Exception):
    """Base of the errors the services raise; each carries a stable `code`."""

    code = "error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.code)


class InvalidWhere(MemoryServiceError):
    """A place without an owner: never means "everyone"."""

    code = "invalid_where"


class NotFound(MemoryServiceError):
    """No such memory, person, request or key for this caller; `what` names it for an answer."""

    code = "not_found"

    def __init__(self, what: str = "memory") -> None:
        super().__init__(what)
        self.what = what


class Conflict(MemoryServiceError):
    """A compare-and-set lost: the memory is at `actual_revision` now."""

    code = "conflict"

    def __init__(self, actual_revision: int) -> None:
        super().__init__(f"conflict: actual revision {actual_revision}")
        self.actual_revision = actual_revision


class InvalidArgument(MemoryServiceError):
    """An argument outside its documented range (a bad cursor, an unknown format)."""

    def __init__(self, code: str, message: str | None = None) -> None:
        super().__init__(message or code)
        self.code = code


class Refused(MemoryServiceError):
    """A change that was not made, with a stable code: `empty`, `too_long`, `paused`, a content
    rule's code... Raised by the services; `remember_many` answers one per text it refused.
    Two refusals with the same code are equal (they are values as much as errors)."""

    ok = False

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Refused) and other.code == self.code

    def __hash__(self) -> int:
        return hash(("refused", self.code))

    def __repr__(self) -> str:
        return f"Refused({self.code!r})"


class Unavailable(MemoryServiceError):
    """The memory cannot be reached for now (the store refuses every transaction until its
    operator mends what it says in the logs): a retry later may work."""

    code = "database_unavailable"
