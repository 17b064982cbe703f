"""Migration 0018's rewrite: every consolidation `ref` kept before it, replaced by its conversation
key (`portal.domain.decisions.conversation_key`, what the service keeps of a ref since): the
claims in `consolidation_refs` (so a conversation learnt before is still `already`), the jobs in
`consolidation_jobs` (a queued one runs under the key), and the `consolidation` sources of
memories and earlier wordings. In batches, by each table's owner-led key.

The key is keyed by the store's `words_secret` when its text is encrypted: the migration is handed
that secret (`memory-portal db upgrade` does, from MEMORY_ENCRYPTION_KEYS) and refuses, naming the
variable, to rewrite an encrypted database's refs without it (an unkeyed digest would never match
again, and every conversation learnt before would be learnt a second time)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from portal.domain.decisions import conversation_key

BATCH = 1000
CONSOLIDATION = '"consolidation"'  # how a consolidation source is written in a sources column (JSON)


class KeysNeeded(RuntimeError):
    """An encrypted database's refs cannot be digested without its keys' secret."""


def rekey_refs(bind: Connection, secret: bytes | None) -> int:
    """Replace every consolidation ref kept in the clear by its conversation key; answers how many
    rows changed. Raises KeysNeeded for an encrypted database (`encryption_check` holds its probe)
    with refs to rewrite and no `secret`."""
    claims = sa.table("consolidation_refs", *_columns("owner_id", "scope", "ref"))
    jobs = sa.table("consolidation_jobs", *_columns("owner_id", "scope", "id", "ref"))
    kept = sa.table("memories", *_columns("owner_id", "id", "sources"))
    earlier = sa.table("memory_revisions", *_columns("owner_id", "memory_id", "revision", "sources"))
    if secret is None and _encrypted(bind) and any(
            bind.execute(sa.select(sa.literal(1)).select_from(t)).first() is not None for t in (claims, jobs)):
        raise KeysNeeded("migration 0018 keeps consolidation refs as keyed digests: run it with the database's "
                         "MEMORY_ENCRYPTION_KEYS set (`memory-portal db upgrade`)")

    def key(ref: Any) -> Any:
        return conversation_key(ref, secret) if isinstance(ref, str) else ref

    changed = _rekey_claims(bind, claims, key)
    changed += _rewrite(bind, jobs, ("owner_id", "scope", "id"), "ref", key)
    for table, primary in ((kept, ("owner_id", "id")), (earlier, ("owner_id", "memory_id", "revision"))):
        changed += _rewrite(bind, table, primary, "sources", lambda raw: _sources(raw, key),
                            table.c.sources.contains(CONSOLIDATION))
    return changed


def _columns(*names: str) -> list[sa.ColumnClause[Any]]:
    return [sa.column(name, sa.Integer if name == "revision" else sa.Text) for name in names]


def _encrypted(bind: Connection) -> bool:
    if not sa.inspect(bind).has_table("encryption_check"):
        return False
    probe = sa.table("encryption_check", sa.column("id", sa.Integer))
    return bind.execute(sa.select(probe.c.id).where(probe.c.id == 1)).first() is not None


def _sources(raw: Any, key: Callable[[Any], Any]) -> Any:
    try:
        sources = json.loads(raw)
    except (TypeError, ValueError):
        return raw
    if not isinstance(sources, list):
        return raw
    for source in sources:
        if isinstance(source, dict) and source.get("kind") == "consolidation":
            source["ref"] = key(source.get("ref"))
    return json.dumps(sources)


def _rekey_claims(bind: Connection, claims: sa.TableClause, key: Callable[[Any], Any]) -> int:
    """The claims, place by place: the ref is part of their key, so a page in key order could meet
    again a claim rewritten by the page before (and digest its digest); a place's claims are all
    read before any of them is written, and the next place comes after it in (owner, scope) order."""
    c = claims.c
    after: tuple[Any, ...] | None = None
    count = 0
    while True:
        page = sa.select(c.owner_id, c.scope).distinct()
        if after is not None:
            page = page.where(sa.tuple_(c.owner_id, c.scope) > sa.tuple_(*after))
        places = bind.execute(page.order_by(c.owner_id, c.scope).limit(BATCH)).all()
        if not places:
            return count
        for owner_id, scope in places:
            here = (c.owner_id == owner_id, c.scope == scope)
            refs = bind.execute(sa.select(c.ref).where(*here)).scalars().all()
            changed = [{"old": ref, "new": new} for ref in refs if (new := key(ref)) != ref]
            if changed:
                bind.execute(claims.update().where(*here, c.ref == sa.bindparam("old")).values(ref=sa.bindparam("new")),
                             changed)
                count += len(changed)
        after = tuple(places[-1])


def _rewrite(bind: Connection, table: sa.TableClause, primary: Sequence[str], column: str,
             compute: Callable[[Any], Any], *where: Any) -> int:
    """`column = compute(column)` where it differs, in batches of BATCH in `primary` order (the
    column is not one of `primary`: a row rewritten is never met again)."""
    keys = [table.c[name] for name in primary]
    after: tuple[Any, ...] | None = None
    count = 0
    while True:
        page = sa.select(*keys, table.c[column]).where(*where)
        if after is not None:
            page = page.where(sa.tuple_(*keys) > sa.tuple_(*after))
        rows = bind.execute(page.order_by(*keys).limit(BATCH)).all()
        if not rows:
            return count
        changed = [{**{f"k_{n}": v for n, v in zip(primary, row[:-1], strict=True)}, "value": value}
                   for row in rows if (value := compute(row[-1])) != row[-1]]
        if changed:
            bind.execute(table.update().where(*(table.c[n] == sa.bindparam(f"k_{n}") for n in primary))
                         .values({column: sa.bindparam("value")}), changed)
            count += len(changed)
        after = tuple(rows[-1][:-1])
