"""Fixtures for the service-layer unit tests: the in-memory reference store, deterministic fake
embedders (our own `Embedder` protocol boundary, the only place fakes are allowed) and a clock the
tests move by hand. Nothing here mocks the store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from portal.adapters.memory.store import InMemoryStore
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

from ..fakes.embedders import HashEmbedder

START = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)


class FailingEmbedder:
    """An embedder in an outage: every call raises."""

    def __init__(self, model_id: str = "fake-hash-64") -> None:
        self.model_id = model_id
        self.calls = 0

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        self.calls += 1
        raise RuntimeError("embedding service unavailable")


class ConstantEmbedder:
    """Gives every text the same vector: two texts from the same model are then cosine 1.0 apart."""

    def __init__(self, model_id: str, dim: int = 8) -> None:
        self.model_id = model_id
        self.dim = dim

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        return np.ones((len(texts), self.dim), dtype=np.float32), self.model_id


class FakeClock:
    """A clock the test moves. Each reading moves it on by `tick` (1 s by default) so creation
    times are distinct and "newest first" is deterministic; `tick=timedelta(0)` freezes it."""

    def __init__(self, start: datetime = START, tick: timedelta = timedelta(seconds=1)) -> None:
        self.now = start
        self.tick = tick
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            moment = self.now
            self.now = self.now + self.tick
            return moment

    def advance(self, **delta: float) -> datetime:
        with self._lock:
            self.now = self.now + timedelta(**delta)
            return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(synonyms={"puppy": "dog", "canine": "dog", "kitten": "cat"})


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def place() -> Place:
    return Place("alice", "tenant-a")


@pytest.fixture
def make_service(store: InMemoryStore, embedder: HashEmbedder, clock: FakeClock) -> Callable[..., MemoryService]:
    """Build a MemoryService on the shared store, embedder and clock; keyword arguments override
    (pass `embedder=None` for no embedder, `options=Options(...)` for other options)."""

    def build(**overrides: Any) -> MemoryService:
        kwargs: dict[str, Any] = {"store": store, "embedder": embedder, "clock": clock}
        kwargs.update(overrides)
        return MemoryService(**kwargs)

    return build


@pytest.fixture
def service(make_service: Callable[..., MemoryService]) -> MemoryService:
    return make_service()


@pytest.fixture
def words_only(make_service: Callable[..., MemoryService]) -> MemoryService:
    """A service without an embedder: ranking by words only."""
    return make_service(embedder=None)


def remember_ok(service: MemoryService, place: Place, text: str, **kwargs: Any):
    """Remember and insist it was kept; answers the saved memory."""
    result = service.remember(place, text, **kwargs)
    assert result.ok, f"expected {text!r} to be kept, got {result}"
    return result.memory


def active_texts(service: MemoryService, place: Place) -> list[str]:
    return [m.text for m in service.list(place, limit=200).items]


__all__ = ["START", "ConstantEmbedder", "FailingEmbedder", "FakeClock", "HashEmbedder", "active_texts", "remember_ok"]
