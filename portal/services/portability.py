"""Bringing memories in: an import of a file `portal.domain.imports` has read, into one place, in
one transaction with its audit entry.

Every memory passes the checks every write runs (`drafts.draft`: text, kind, content rules,
other people's names); one refused is counted by its code, never half kept. An import is
idempotent: a memory whose words the place already holds, in any state, or that the same file
repeats, is counted as a duplicate and not added again, so the same file twice adds nothing.
Our own export comes back as it went: kinds, importance, pins, origins, channel, state, times
and every earlier revision (under new ids: ids are never reused).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from portal.domain.audit import AuditNote
from portal.domain.errors import Refused
from portal.domain.imports import Item, Parsed
from portal.domain.types import Memory, Place, Revision, Source, as_place
from portal.inputs import is_valid_text
from portal.ports import Filters

from .context import Context
from .drafts import Draft, draft


@dataclass(frozen=True)
class Imported:
    """What an import did: the ids added, how many were already there, and the refusals by code;
    `new` is how many were (or, in a dry run, would be) added."""

    format: str
    added: list[str]
    duplicates: int
    refused: dict[str, int] = field(default_factory=dict)
    new: int = 0
    batch: str = ""  # the import's own id: every memory it added carries Source("import", batch)
    texts_new: list[str] = field(default_factory=list)  # a dry run's preview, for the person's own eyes
    texts_held: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"added": len(self.added), "duplicates": self.duplicates, "refused": sum(self.refused.values())}


class Portability:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def import_parsed(self, place: Place, parsed: Parsed, audit: AuditNote | None = None,
                      person_name: str | None = None, dry_run: bool = False) -> Imported:
        """Keep what `parsed` holds in `place`; with `dry_run`, only say what would be kept."""
        ctx, place = self.ctx, as_place(place)
        refused: Counter[str] = Counter()
        checked: list[tuple[Item, Draft]] = []
        for item in parsed.items:
            try:
                checked.append((item, draft(ctx, place, item.text, item.kind or "fact", item.importance, None, True,
                                            person_name)))
            except Refused as exc:
                refused[exc.code] += 1
        added: list[str] = []
        duplicates = 0
        held_texts: list[str] = []
        with ctx.store.write(place) as tx:
            held = {m.words_key for m in tx.list(Filters(state=None))}
            fresh: list[tuple[Item, Draft]] = []
            for item, checked_draft in checked:
                if checked_draft.words_key in held:
                    duplicates += 1
                    held_texts.append(checked_draft.text)
                    continue
                held.add(checked_draft.words_key)
                fresh.append((item, checked_draft))
            if dry_run:
                return Imported(parsed.format, [], duplicates, dict(refused), new=len(fresh),
                                texts_new=[d.text for _, d in fresh], texts_held=held_texts)
            vectors = ctx.embed_many(place, [d.text for _, d in fresh], "document")
            now = ctx.clock()
            batch = ctx.id_factory()
            source = Source("import", batch)
            for (item, d), vector in zip(fresh, vectors, strict=True):
                created = item.created_at or now
                memory = Memory(
                    id=ctx.id_factory(), owner_id=place.owner_id, scope=place.scope, revision=item.revision,
                    text=d.text, kind=d.kind, importance=d.importance, created_at=created,
                    updated_at=item.updated_at or created, origin=item.origin, sources=(*item.sources, source),
                    channel=item.channel, seen=item.seen, pinned=item.pinned, state=item.state,
                    last_used_at=item.last_used_at, embedding=vector, words_key=d.words_key,
                    last_op="create" if item.revision == 1 else "update",
                )
                tx.insert(memory)
                for earlier in item.earlier:
                    if not is_valid_text(earlier.text) or not 0 < earlier.revision < item.revision:
                        continue  # an earlier wording the file garbled is not worth refusing the memory
                    tx.push_revision(Revision(
                        memory.id, earlier.revision, earlier.text[:ctx.options.max_text_length], earlier.kind,
                        earlier.importance, earlier.origin, earlier.sources, earlier.written_at or created,
                        op="create" if earlier.revision == 1 else "update"))
                added.append(memory.id)
            result = Imported(parsed.format, added, duplicates, dict(refused), new=len(added), batch=batch)
            if audit is not None:
                tx.record(audit.entry(place.owner_id, place.scope, result.counts(), at=now))
            tx.commit()
        return result

    def undo_import(self, place: Place, batch: str, audit: AuditNote | None = None) -> int:
        """Take back one import: forget every memory it added (its revisions too, tombstoned as
        any forget), in one transaction with its audit entry. Answers how many were forgotten."""
        ctx, place = self.ctx, as_place(place)
        if not isinstance(batch, str) or not batch:
            return 0
        with ctx.store.write(place) as tx:
            ids = [m.id for m in tx.list(Filters(state=None))
                   if any(s.kind == "import" and s.ref == batch for s in m.sources)]
            if ids:
                tx.remove(ids)
                tx.tombstone(ids, ctx.clock())
            if audit is not None:
                tx.record(audit.entry(place.owner_id, place.scope, {"memories": len(ids)}, at=ctx.clock()))
            tx.commit()
        return len(ids)
