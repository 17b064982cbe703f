"""What every service is handed: the store (its units of work), the embedder and the model, the
options, the mask, the AI switch, the clock and the id factory — one object the services share,
so a deployment (or a test) that swaps the embedder or the model swaps it for all of them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from portal.domain.apps import App
from portal.domain.jobs import JobQueue
from portal.domain.options import LLM, AiSwitch, Clock, Embedder, Mask, NamesOf, Options
from portal.domain.text import mask_pii, no_mask
from portal.domain.types import Embedding, Place
from portal.ports import Store, as_vector
from portal.services.use_log import UseLog

log = logging.getLogger("portal.memory")


@dataclass
class Context:
    store: Store
    embedder: Embedder | None
    options: Options
    names_of: NamesOf
    mask: Mask
    ai_enabled: AiSwitch
    clock: Clock
    id_factory: Callable[[], str]
    llm: LLM | None
    app: App | None = None  # the app this context acts for (MemoryService.for_app), None for the person and staff
    queue: JobQueue | None = None  # what wakes a worker for a background job (portal.services.jobs)
    # The conversation of the app this context serves (a digest of the assistant's reference,
    # `portal.domain.decisions.conversation_key`): what it is handed is recorded as used in it.
    conversation: str | None = None
    # The tenant's default "forget what the assistant learns after N days" (None: never).
    tenant_learnt_days: Callable[[Place], int | None] = lambda place: None
    # Where what the apps are handed is noted, written at once or in batches (`portal.services.use_log`).
    uses: UseLog = None  # type: ignore[assignment]  # made by MemoryService

    def note_uses(self, place: Place, ids: Sequence[str], action: str, mark: bool = False,
                  at: datetime | None = None) -> None:
        """These memories were handed out by this context (at `at`, else now): marked used (`mark`,
        recall's hits) and, for an app, counted as its `action` in its conversation."""
        app_id = self.app.id if self.app is not None else None
        self.uses.note(place, ids, at or self.clock(), app_id, action if app_id else None, self.conversation, mark)

    @staticmethod
    def mask_of(mask: Mask | str) -> Mask:
        """A mask function from what a deployment names ("pii", "none") or hands in."""
        if mask == "pii":
            return mask_pii
        if mask in ("", "none") or not callable(mask):
            return no_mask
        return mask

    def admit(self, place: Place) -> None:
        """For an app's view (`MemoryService.for_app`): check the person's decision about the app
        now, before any other work (Refused `app_blocked`); nothing for the person or staff."""
        if self.app is not None:
            with self.store.read(place, snapshot=False):
                pass

    def embed(self, place: Place, text: str, purpose: str) -> Embedding | None:
        """A vector for `text`, or None when the AI is off, no embedder is set, or it fails."""
        return self.embed_many(place, [text], purpose)[0]

    def embed_many(self, place: Place, texts: Sequence[str], purpose: str) -> list[Embedding | None]:
        """A vector for each text, in one call to the embedder; all None when the AI is off, no
        embedder is set, or it fails (an outage never loses a write or a read)."""
        if not texts or self.embedder is None or not self.ai_enabled(place):
            return [None for _ in texts]
        try:
            vectors, model = self.embedder.embed([self.mask(text, place) for text in texts], purpose)
            if len(vectors) != len(texts):
                raise ValueError("the embedder answered another number of vectors")
            return [Embedding(model, as_vector(vector)) for vector in vectors]
        except Exception as exc:  # an embedder outage must never lose a write or a read
            log.warning("embedder.failed place=%s error=%s", pid(place), type(exc).__name__)
            return [None for _ in texts]


def pid(place: object) -> str:
    """A place for logs: ids only (and never a failure of its own while logging one)."""
    return f"{getattr(place, 'owner_id', '?')}/{getattr(place, 'scope', '?')}"
