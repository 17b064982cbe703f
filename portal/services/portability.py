"""Bringing memories in: an import of a file `portal.domain.imports` has read, into one place, in
one transaction with its audit entry.

Every wording a file brings, the current one and each earlier one alike, passes the checks every
write runs (`drafts.draft`: text cleaning, length, kind resolution, content rules, other people's
names, the importance clamp), so no Undo can later make current what no write would have kept. A
memory whose current wording is refused is counted by its code, never half kept. An earlier
wording that is refused, or whose revision number is missing, repeated or not below the memory's
(`invalid_revision`), is left out and counted by its code (`earlier_refused`); the memory itself is
kept. An import is idempotent: a memory whose words the place already holds, in any state, is
counted as a duplicate and not added again, so the same file twice adds nothing; so is one that
means what an active memory says (its vector at least `duplicate_threshold` close, same model and
size: the test `remember` makes). A line the file repeats (the same words as a line above it) is a
duplicate within the file, counted apart (`repeated`): the file's first telling is the one judged.

A memory the file gives no kind (a line, mem0's JSON) gets the kind its first cue word names
(`portal.domain.kind_cues`), else `fact`. The person's `Choices` in the preview (a kind for a
memory, memories left out) win over the file and the guess; a memory left out is counted
(`skipped`), never checked nor kept. Memories keep the file's order: one the file gives no time is
made a microsecond earlier than the one before it, so the newest-first list shows them as the file
lists them.

Nothing else a file says is taken on trust: sources are kept only of the kinds a write gives
(`portal`, `api`, `tool`, `consolidation`), with a readable reference of at most 200 characters; a
source of kind `import` is never taken from a file, and every wording an import keeps carries its
own batch (`Source("import", batch)`), so one import's Undo takes back exactly what it added. Times
later than the import become the import's time (a memory never changes before it is made, nor an
earlier wording outside its memory's life). Our own export comes back as it went: kinds, importance,
pins, origins, channel, state, times and every earlier revision (under new ids: ids are never reused).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from portal.domain.audit import AuditNote
from portal.domain.errors import Refused
from portal.domain.imports import Choices, EarlierWording, Item, Parsed
from portal.domain.kind_cues import guess_kind
from portal.domain.provenance import OPERATOR_BATCH
from portal.domain.types import Embedding, Memory, Place, Revision, Source, as_place
from portal.inputs import is_valid_text
from portal.ports import Filters, StoreTx

from .context import Context
from .drafts import ACTIVE, Draft, draft

# The kinds of source a file may carry for a wording: what writes give. Never `import`: only the
# import's own batch marks what it added.
SOURCE_KINDS = ("portal", "api", "tool", "consolidation")
MAX_REF = 200


@dataclass(frozen=True, slots=True)
class Line:
    """One memory of a preview, for the person's own eyes: its place in the file (what `Choices`
    name), its wording and kind as they would be kept, and for one kept already, the wording of the
    memory that holds it when the words differ (a match by meaning)."""

    index: int
    text: str
    kind: str
    kept_as: str | None = None


@dataclass(frozen=True)
class Imported:
    """What an import did: the ids added, how many were duplicates (kept already, or repeated by
    the file: `repeated` of them), and the refusals by code; `new` is how many were (or, in a dry
    run, would be) added; `earlier_refused` counts by code the earlier wordings of those memories
    that were (or would be) left out."""

    format: str
    added: list[str]
    duplicates: int
    refused: dict[str, int] = field(default_factory=dict)
    new: int = 0
    earlier_refused: dict[str, int] = field(default_factory=dict)
    batch: str = ""  # the import's own id: every memory it added carries Source("import", batch)
    lines_new: list[Line] = field(default_factory=list)  # a dry run's preview, for the person's own eyes
    lines_held: list[Line] = field(default_factory=list)
    skipped: int = 0  # left out by the person's choice
    repeated: int = 0  # of the duplicates, the lines that repeat a line above them in the file
    lines_repeated: list[Line] = field(default_factory=list)

    @property
    def texts_new(self) -> list[str]:
        return [line.text for line in self.lines_new]

    @property
    def texts_held(self) -> list[str]:
        return [line.text for line in self.lines_held]

    def counts(self) -> dict[str, int]:
        return {"added": len(self.added), "duplicates": self.duplicates, "refused": sum(self.refused.values()),
                "earlier_refused": sum(self.earlier_refused.values())}


@dataclass(frozen=True, slots=True)
class Checked:
    """One memory of the file that passed the checks: its current wording, its earlier wordings
    that passed too, and those left out, by code."""

    index: int  # its place in the file
    item: Item
    draft: Draft
    earlier: list[tuple[EarlierWording, Draft]]
    left_out: Counter[str]


class Portability:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def import_parsed(self, place: Place, parsed: Parsed, audit: AuditNote | None = None,
                      person_name: str | None = None, dry_run: bool = False, choices: Choices | None = None) -> Imported:
        """Keep what `parsed` holds in `place`, as the person's `choices` say; with `dry_run`, only
        say what would be kept. Raises Refused `paused` while the place is paused (an import is a
        write like any other: a paused memory keeps nothing new), keeping nothing."""
        ctx, place = self.ctx, as_place(place)
        choices = choices or Choices()
        refused: Counter[str] = Counter()
        checked: list[Checked] = []
        skipped = 0
        for index, item in enumerate(parsed.items):
            if index in choices.left_out:
                skipped += 1
                continue
            if item.expires_at is not None and item.expires_at <= ctx.clock():
                refused["expired"] += 1  # its time to be forgotten has passed: not brought back
                continue
            try:
                current = draft(ctx, place, item.text, self.kind_of(index, item, choices), item.importance, None, True,
                                person_name)
            except Refused as exc:
                refused[exc.code] += 1
                continue
            checked.append(Checked(index, item, current, *self.earlier_wordings(place, item, person_name)))
        if checked and ctx.embedder is not None:  # spare the embedder the work a paused place would throw away
            with ctx.store.read(place) as reading:
                if reading.settings().paused:
                    raise Refused("paused")
        # Embedded before the place's lock is taken (the embedder may be remote, or slow on 5,000 lines).
        vectors = ctx.embed_many(place, [one.draft.text for one in checked], "document")
        with ctx.store.write(place) as tx:
            if tx.settings().paused:
                raise Refused("paused")
            fresh, vectors, held, repeated = self.not_kept(tx, checked, vectors)
            left_out = sum((one.left_out for one in fresh), Counter[str]())
            if dry_run:
                return Imported(parsed.format, [], len(held) + len(repeated), dict(refused), new=len(fresh),
                                earlier_refused=dict(left_out), lines_new=[_line(one) for one in fresh], lines_held=held,
                                skipped=skipped, repeated=len(repeated), lines_repeated=repeated)
            now = ctx.clock()
            # The operator's import (its audit note says who acts) names its batch so: the person's
            # list then says who brought these memories in (portal.domain.provenance).
            batch = (OPERATOR_BATCH if audit is not None and audit.actor_role == "operator" else "") + ctx.id_factory()
            own = Source("import", batch)
            added = [self.insert(tx, place, one, vector, now, own) for one, vector in zip(fresh, vectors, strict=True)]
            result = Imported(parsed.format, added, len(held) + len(repeated), dict(refused), new=len(added),
                              batch=batch, earlier_refused=dict(left_out), skipped=skipped, repeated=len(repeated))
            if audit is not None:
                tx.record(audit.entry(place.owner_id, place.scope, result.counts(), at=now))
            tx.commit()
        return result

    def kind_of(self, index: int, item: Item, choices: Choices) -> object:
        """The kind to check: the person's choice, else the file's, else the guess from its words."""
        if index in choices.kinds:
            return choices.kinds[index]
        return item.kind or guess_kind(item.text, self.ctx.options.kinds.kinds) or "fact"

    def not_kept(self, tx: StoreTx, checked: list[Checked], vectors: list[Embedding | None]
                 ) -> tuple[list[Checked], list[Embedding | None], list[Line], list[Line]]:
        """The memories the place does not hold yet, with their vectors; the lines it holds: the
        same folded words (in any state), or the same meaning as an active memory (as `remember`
        finds a duplicate: at least `duplicate_threshold` close, same model and size); and the
        lines that repeat the folded words of a line above them in the file."""
        by_words = {m.words_key: m.text for m in tx.list(Filters(state=None))}
        in_file: set[str] = set()
        held: list[Line] = []
        repeated: list[Line] = []
        fresh: list[Checked] = []
        kept_vectors: list[Embedding | None] = []
        for one, vector in zip(checked, vectors, strict=True):
            if one.draft.words_key in in_file:
                repeated.append(_line(one))
                continue
            in_file.add(one.draft.words_key)
            if one.draft.words_key in by_words:
                held.append(_line(one, by_words[one.draft.words_key]))
                continue
            near = tx.nearest(vector, 1, ACTIVE) if vector is not None else []
            match = tx.get(near[0][0]) if near and near[0][1] >= self.ctx.options.duplicate_threshold else None
            if match is not None:
                held.append(_line(one, match.text))
                continue
            fresh.append(one)
            kept_vectors.append(vector)
        return fresh, kept_vectors, held, repeated

    def insert(self, tx: StoreTx, place: Place, one: Checked, vector: Embedding | None, now: datetime,
               own: Source) -> str:
        """Add one memory of the file with its earlier wordings; answers its new id."""
        ctx, item, d = self.ctx, one.item, one.draft
        # A memory the file gives no time is made just before the one above it in the file, so the
        # newest-first list reads as the file does.
        created = _not_after(item.created_at, now) or now - timedelta(microseconds=one.index)
        updated = max(_not_after(item.updated_at, now) or created, created)
        memory = Memory(
            id=ctx.id_factory(), owner_id=place.owner_id, scope=place.scope, revision=item.revision,
            text=d.text, kind=d.kind, importance=d.importance, created_at=created, updated_at=updated,
            origin=item.origin, sources=_sources(item.sources, own), channel=item.channel, seen=item.seen,
            pinned=item.pinned, state=item.state, last_used_at=_not_after(item.last_used_at, now),
            embedding=vector, words_key=d.words_key, last_op="create" if item.revision == 1 else "update",
            expires_at=item.expires_at, withheld=item.withheld,
        )
        tx.insert(memory)
        for earlier, e in sorted(one.earlier, key=lambda kept: kept[0].revision):  # the stores' order of writes
            written = min(max(earlier.written_at or created, created), updated)
            tx.push_revision(Revision(
                memory.id, earlier.revision, e.text, e.kind, e.importance, earlier.origin,
                _sources(earlier.sources, own), written, op="create" if earlier.revision == 1 else "update"))
        return memory.id

    def earlier_wordings(self, place: Place, item: Item,
                         person_name: str | None) -> tuple[list[tuple[EarlierWording, Draft]], Counter[str]]:
        """The earlier wordings of `item` as a write would keep them, and those left out by code: a
        wording refused by the checks of any write, or `invalid_revision` for a number missing, not
        below the memory's own, or given twice (the first the file lists keeps it)."""
        kept: list[tuple[EarlierWording, Draft]] = []
        left_out: Counter[str] = Counter()
        numbers: set[int] = set()
        for earlier in item.earlier:
            if not 0 < earlier.revision < item.revision or earlier.revision in numbers:
                left_out["invalid_revision"] += 1
                continue
            try:
                checked = draft(self.ctx, place, earlier.text, earlier.kind or "fact", earlier.importance, None, True,
                                person_name)
            except Refused as exc:
                left_out[exc.code] += 1
                continue
            numbers.add(earlier.revision)
            kept.append((earlier, checked))
        return kept, left_out

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


def _line(one: Checked, kept: str | None = None) -> Line:
    return Line(one.index, one.draft.text, one.draft.kind, kept if kept is not None and kept != one.draft.text else None)


def _sources(given: tuple[Source, ...], own: Source) -> tuple[Source, ...]:
    """The sources a file gives a wording that a write could have given it, then the import's own."""
    kept: list[Source] = []
    for source in given:
        if source.kind in SOURCE_KINDS:
            ref = source.ref if is_valid_text(source.ref) and 0 < len(source.ref or "") <= MAX_REF else None
            if Source(source.kind, ref) not in kept:
                kept.append(Source(source.kind, ref))
    return (*kept, own)


def _not_after(moment: datetime | None, now: datetime) -> datetime | None:
    return None if moment is None else min(moment, now)
