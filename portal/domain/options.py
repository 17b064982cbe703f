"""The small protocols the service is handed besides the store, and its tunable options."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable
from uuid import uuid4

import numpy as np

from portal.domain.rules import Kinds, Rule
from portal.domain.types import Place


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors, batched. Answers (vectors of shape (n, dim), model id)."""

    model_id: str

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]: ...


@runtime_checkable
class LLM(Protocol):
    """A chat model: answers the prompt under the system message, as text. May raise on failure."""

    def complete(self, system: str, prompt: str) -> str: ...


@runtime_checkable
class Reranker(Protocol):
    """Scores texts by how well each answers a query: one score per text, in their order, higher
    is better (a rerank server: portal.adapters.reranker). May raise on failure or past its deadline."""

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]: ...


class Clock(Protocol):
    def __call__(self) -> datetime: ...


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid4().hex


@dataclass
class Options:
    """Everything about the service's behaviour that a deployment may tune."""

    kinds: Kinds = field(default_factory=Kinds)
    rules: Sequence[Rule] = ()
    max_text_length: int = 500
    max_active: int | None = 1000
    trim_above: int | None = None
    duplicate_threshold: float = 0.92
    on_duplicate: str = "replace"
    min_similarity: float | None = None
    # The relevance floor: with `recall(..., relevant_only=True)` (the portal's search, and API
    # callers asking `"relevant_only": true`) a memory is a hit only if it shares a word with the
    # query or its plain cosine reaches this. Set for all-MiniLM-L6-v2, whose cosines run low: a
    # query of nonsense ("zzzqqq", "asdf", "lorem ipsum") meets the demo memories at 0.10-0.19 at
    # best, a short real question its memory at 0.24-0.53 ("cat" 0.53, "job" 0.28, "trip" 0.26).
    # Another model has another scale: MEMORY_RELEVANCE_FLOOR.
    relevance_floor: float = 0.2
    # How long the connected apps' uses are kept: `prune` deletes those last counted before (None keeps them).
    app_uses_retention: timedelta | None = timedelta(days=180)
    # How recall fuses its two rankings: "relative" scales each ranking's scores to [0, 1] and adds
    # them by weight; "rrf" adds weighted reciprocal ranks (k = 60). The weights (words a little
    # over meaning) were tuned on the LoCoMo dev set with all-MiniLM-L6-v2: docs/benchmarks.md.
    fusion: str = "relative"
    vector_weight: float = 0.45
    lexical_weight: float = 0.55
    # The meaning ranking takes this share of the mean direction of the memories searched out of
    # the query (0: plain cosine), then moves the query toward the `feedback_memories` first fused
    # hits by `feedback_weight` and ranks by meaning once more (0 memories: no second pass).
    meaning_centering: float = 0.7
    feedback_memories: int = 3
    feedback_weight: float = 0.3
    portrait_max_length: int = 1200
    portrait_min_importance: int = 4
    default_importance: int = 3
    trusted_tools: tuple[str, ...] = ()
    transcript_max: int = 40000
    transcript_keep: str = "start"
    known_max: int = 60
    prompts: dict[str, str] = field(default_factory=dict)
    # How long a pending idempotent request or a claimed conversation holds its key before a retry
    # may take it over; the request renews it every third of that while it runs.
    lease_seconds: float = 60.0
    # A background consolidation whose model failed is tried again after this, doubled each time.
    job_retry_seconds: float = 2.0
    # How long a host that asks to wait for a background consolidation (mem0's `async_mode=False`)
    # is kept waiting before it is answered that the job is still pending.
    job_wait_seconds: float = 20.0
    # How long a person's own edit can be undone: the wording it replaced is kept this long, then
    # erased by the periodic task (the portal's toast says so). At most 15 minutes.
    undo_window: timedelta = timedelta(minutes=15)
    # How long a background consolidation's summary waits for its app to read it (once) before it
    # is erased unread (MEMORY_JOB_SUMMARY_MINUTES).
    summary_retention: timedelta = timedelta(hours=1)
    # What recall and the other reads hand to apps (use times, counts, conversations) is written
    # in a batch every this many seconds (MEMORY_USES_EVERY_SECONDS; `serve` and gunicorn: 2), off
    # the request path; 0 writes it with each call (`portal.services.use_log`).
    uses_every: float = 0.0
    # A rerank server's second opinion on recall's first `rerank_candidates` (MEMORY_RERANK_URL;
    # off by default): it orders them and its relevance is the hits' score; when it fails or is
    # slow, recall keeps its own order.
    reranker: Reranker | None = None
    rerank_candidates: int = 20
    # A query naming a period ("in May", "last year", "en 2023": portal.domain.periods) favours,
    # among its first `date_candidates`, the memories said in it (their `timestamp`, else when they
    # were kept) or whose words name a time in it: each moves `date_weight` of the way up to the
    # best score recall gives; the others keep theirs. A memory said up to `date_grace` after the
    # period counts too. 0 turns it off. Tuned on the LoCoMo dev set: docs/benchmarks.md.
    date_weight: float = 0.5
    date_candidates: int = 50
    date_grace: timedelta = timedelta(0)

    def __post_init__(self) -> None:
        if self.on_duplicate not in ("replace", "reinforce", "keep"):
            raise ValueError("on_duplicate is 'replace', 'reinforce' or 'keep'")
        if self.fusion not in ("relative", "rrf"):
            raise ValueError("fusion is 'relative' or 'rrf'")
        if self.vector_weight < 0 or self.lexical_weight < 0:
            raise ValueError("fusion weights are not negative")
        if not 0.0 <= self.meaning_centering <= 1.0:
            raise ValueError("meaning_centering is in [0, 1]")
        if self.feedback_memories < 0 or self.feedback_weight < 0:
            raise ValueError("feedback_memories and feedback_weight are not negative")
        if self.max_text_length < 1:
            raise ValueError("max_text_length must be positive")
        if self.transcript_keep not in ("start", "end"):
            raise ValueError("transcript_keep is 'start' or 'end'")
        if not 0.0 < self.duplicate_threshold <= 1.0:
            raise ValueError("duplicate_threshold is in (0, 1]")
        if not -1.0 <= self.relevance_floor <= 1.0:
            raise ValueError("relevance_floor is in [-1, 1]")
        if self.lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        if not 0 <= self.job_wait_seconds <= 60:
            raise ValueError("job_wait_seconds is between 0 and 60")
        if not timedelta(0) < self.undo_window <= timedelta(minutes=15):
            raise ValueError("undo_window is more than nothing and at most 15 minutes")
        if not 0 <= self.uses_every <= 60:
            raise ValueError("uses_every is between 0 and 60 seconds")
        if not 0.0 <= self.date_weight <= 1.0 or not isinstance(self.date_candidates, int) or not (
                1 <= self.date_candidates <= 1000) or not timedelta(0) <= self.date_grace <= timedelta(days=366):
            raise ValueError("date_weight is in [0, 1], date_candidates in [1, 1000], date_grace at most a year")
        if self.summary_retention <= timedelta(0):
            raise ValueError("summary_retention must be positive")

    @property
    def trim_threshold(self) -> int | None:
        """Above how many active memories trimming starts (None: no cap)."""
        if not self.max_active:
            return None
        return max(self.trim_above or self.max_active, self.max_active)


NamesOf = Callable[[Place], Sequence[str]]
Mask = Callable[[str, Place], str]
AiSwitch = Callable[[Place], bool]


def no_default(place: Place) -> int | None:
    """No tenant default for how long learnt memories are kept: they are kept until forgotten."""
    return None


def no_names(place: Place) -> Sequence[str]:
    return ()


def always_on(place: Place) -> bool:
    return True
