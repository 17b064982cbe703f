"""One way for every test to expect a service's refusal: the error family of portal.domain.errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from portal.domain.errors import MemoryServiceError


@contextmanager
def refused(code: str) -> Iterator[None]:
    """The block must raise the service error whose code is `code` (not_found, conflict, empty...)."""
    with pytest.raises(MemoryServiceError) as caught:
        yield
    assert caught.value.code == code, f"expected refusal {code!r}, got {caught.value.code!r}"
