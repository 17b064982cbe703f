"""Vectors for the memories without one (or with one of another model): `reindex`, resumable, one
batch of the embedder at a time, never a vector computed for old text landing on new text."""

from __future__ import annotations

from collections.abc import Callable

from portal.domain.types import Embedding, Place
from portal.ports import as_vector

from .context import Context


def reindex(ctx: Context, limit: int | None = None, progress: Callable[[int], None] | None = None, batch: int = 64) -> int:
    """Give a vector to memories without one, or re-embed those of another model. Resumable:
    a memory whose revision moved meanwhile is skipped and picked up by the next run."""
    if ctx.embedder is None:
        return 0
    done = 0
    seen: set[tuple[Place, str, int]] = set()
    while limit is None or done < limit:
        size = batch if limit is None else min(batch, limit - done)
        pending = ctx.store.needing_vector(ctx.embedder.model_id, None, size + len(seen))
        fresh = [t for t in pending if (t.place, t.id, t.revision) not in seen][:size]
        if not fresh:
            break
        seen.update((t.place, t.id, t.revision) for t in fresh)
        todo = [t for t in fresh if ctx.ai_enabled(t.place)]
        if not todo:
            continue
        vectors, model = ctx.embedder.embed([ctx.mask(t.text, t.place) for t in todo], "document")
        for item, vector in zip(todo, vectors, strict=True):
            embedding = Embedding(model, as_vector(vector))
            if ctx.store.set_embedding(item.place, item.id, item.revision, item.updated_at, embedding):
                done += 1
        if progress:
            progress(len(todo))
    return done
