"""A place's records beside its memories: tombstones, settings, consolidation refs, idempotency
receipts, the erasure of the whole place, and the audit entries written with a change. A mixin of
`SqlTx`, which gives it `conn`, `place`, `bound` and `store`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import and_, delete, insert, literal, or_, select, update
from sqlalchemy.sql.elements import ColumnElement

from portal.adapters.sql.audit import AuditLog
from portal.adapters.sql.engine import OWNER_TABLE_NAMES
from portal.adapters.sql.statements import (
    APP_CONTROL,
    PAUSED,
    PRESENT,
    TOMBSTONED,
    could_be_id,
    now,
)
from portal.adapters.sql.tables import (
    EVERY_APPS_CLAIM,
    app_controls,
    app_uses,
    consolidation_jobs,
    consolidation_refs,
    idempotency_receipts,
    memories,
    memory_settings,
    memory_tombstones,
)
from portal.adapters.sql.tx_state import PlaceTxState
from portal.adapters.sql.uow import purge
from portal.domain.apps import REMEMBERED, AppUse
from portal.domain.audit import AuditEntry
from portal.domain.jobs import Job, content_free
from portal.domain.types import PurgeCounts, Receipt
from portal.ports import Settings


class PlaceRecords(PlaceTxState):
    token_gone: bool

    def here(self, table: Any = memories) -> ColumnElement[bool]:
        """This place in `table`'s WHERE clause (every table holding a person's rows has both columns)."""
        return and_(table.c.owner_id == self.place.owner_id, table.c.scope == self.place.scope)


    def tombstone(self, ids: Sequence[str], at: datetime) -> None:
        for memory_id in dict.fromkeys(ids):
            if not self.is_tombstoned(memory_id):
                self.conn.execute(
                    insert(memory_tombstones).values(
                        owner_id=self.place.owner_id, scope=self.place.scope, memory_id=memory_id, forgotten_at=at
                    )
                )

    def is_tombstoned(self, memory_id: str) -> bool:
        found = self.conn.execute(TOMBSTONED, {**self.bound, "memory_id": memory_id}).first()
        return found is not None

    def settings(self) -> Settings:
        row = self.conn.execute(PAUSED, self.bound).first()
        return Settings(paused=bool(row[0]), learnt_days=row[1]) if row else Settings()

    def set_settings(self, settings: Settings) -> None:
        values = {"paused": settings.paused, "learnt_days": settings.learnt_days, "updated_at": now()}
        done = self.conn.execute(update(memory_settings).where(self.here(memory_settings)).values(**values)).rowcount
        if not done:
            self.conn.execute(
                insert(memory_settings).values(owner_id=self.place.owner_id, scope=self.place.scope, **values)
            )

    def claim_ref(self, ref: str, at: datetime, lease_until: datetime | None = None, holder: str | None = None,
                  app_id: str = "") -> bool:
        c = consolidation_refs.c
        # The app's own claim, and one kept before claims were an app's (it holds for every app).
        claims = (self.here(consolidation_refs), c.ref == ref, c.app_id.in_((app_id, EVERY_APPS_CLAIM)))
        found = self.conn.execute(select(c.state, c.lease_until).where(*claims)).all()
        if any(state != "running" or (until is not None and until >= at) for state, until in found):
            return False
        if found:  # held by a worker whose lease ran out (it died, or its request was cut): taken over
            self.conn.execute(delete(consolidation_refs).where(*claims))
        self.conn.execute(insert(consolidation_refs).values(
            owner_id=self.place.owner_id, scope=self.place.scope, ref=ref, app_id=app_id, claimed_at=at,
            state="running" if lease_until is not None else "done", lease_until=lease_until, holder=holder))
        return True

    def renew_ref(self, ref: str, holder: str, lease_until: datetime, app_id: str = "") -> bool:
        return self._held(ref, holder, app_id, {"lease_until": lease_until})

    def finish_ref(self, ref: str, holder: str, app_id: str = "") -> bool:
        return self._held(ref, holder, app_id, {"state": "done", "lease_until": None})

    def holds_ref(self, ref: str, holder: str, app_id: str = "") -> bool:
        return self.conn.execute(select(literal(1)).where(*self._holding(ref, holder, app_id))).first() is not None

    def _holding(self, ref: str, holder: str, app_id: str) -> tuple[ColumnElement[bool], ...]:
        c = consolidation_refs.c
        return self.here(consolidation_refs), c.ref == ref, c.app_id == app_id, c.state == "running", c.holder == holder

    def _held(self, ref: str, holder: str, app_id: str, values: dict[str, Any]) -> bool:
        return bool(self.conn.execute(
            update(consolidation_refs).where(*self._holding(ref, holder, app_id)).values(**values)).rowcount)

    def release_ref(self, ref: str, app_id: str = "") -> bool:
        c = consolidation_refs.c
        return bool(self.conn.execute(
            delete(consolidation_refs).where(self.here(consolidation_refs), c.ref == ref, c.app_id == app_id)).rowcount)

    # ---------------------------------------------------------------- connected apps

    def app_control(self, app_id: str) -> str | None:
        state = self.conn.execute(APP_CONTROL, {**self.bound, "app_id": app_id}).scalar()
        return str(state) if state is not None else None

    def app_controls(self) -> dict[str, str]:
        c = app_controls.c
        return {row.app_id: row.state for row in self.conn.execute(select(c.app_id, c.state).where(self.here(app_controls)))}

    def set_app_control(self, app_id: str, state: str | None, at: datetime) -> bool:
        c = app_controls.c
        before = self.app_control(app_id)
        if before == state:
            return False
        if state is None:
            self.conn.execute(delete(app_controls).where(self.here(app_controls), c.app_id == app_id))
        elif before is None:
            self.conn.execute(insert(app_controls).values(
                owner_id=self.place.owner_id, scope=self.place.scope, app_id=app_id, state=state, updated_at=at))
        else:
            self.conn.execute(update(app_controls).where(self.here(app_controls), c.app_id == app_id)
                              .values(state=state, updated_at=at))
        return True

    def present(self, ids: Sequence[str]) -> list[str]:
        """Those of these ids that name a memory of this place (any state), in their order."""
        wanted = [i for i in dict.fromkeys(ids) if could_be_id(i)]
        if not wanted:
            return []
        found = set(self.conn.execute(PRESENT, {**self.bound, "ids": wanted}).scalars())
        return [i for i in wanted if i in found]

    def app_uses(self, memory_id: str | None = None) -> list[AppUse]:
        c = app_uses.c
        query = select(app_uses).where(self.here(app_uses))
        if memory_id is not None:
            query = query.where(c.memory_id == memory_id)
        rows = self.conn.execute(query.order_by(c.last_at.desc(), c.app_id, c.memory_id, c.action)).mappings()
        return [AppUse(r["app_id"], r["memory_id"], r["action"], date.fromisoformat(r["day"]), r["count"], r["last_at"])
                for r in rows]

    def writers(self, memory_ids: Sequence[str]) -> dict[str, str]:
        wanted = [i for i in dict.fromkeys(memory_ids) if could_be_id(i)]
        if not wanted:
            return {}
        c = app_uses.c
        rows = self.conn.execute(select(c.memory_id, c.app_id).where(
            self.here(app_uses), c.action == REMEMBERED, c.memory_id.in_(wanted)).order_by(c.day.desc(), c.app_id.desc()))
        return {str(m): str(a) for m, a in rows}  # the earliest day's (and smallest app id's) last: it wins

    # ---------------------------------------------------------------- consolidation jobs

    def put_job(self, job: Job) -> None:
        self.conn.execute(insert(consolidation_jobs).values(
            owner_id=self.place.owner_id, scope=self.place.scope, id=job.id, **self._job_values(job)))

    def get_job(self, job_id: str) -> Job | None:
        if not could_be_id(job_id):
            return None
        j = consolidation_jobs.c
        row = self.conn.execute(select(consolidation_jobs).where(self.here(consolidation_jobs), j.id == job_id)
                                ).mappings().first()
        if row is None:
            return None
        decrypt = self.store.decrypt
        return Job(row["id"], row["owner_id"], row["scope"], row["ref"], row["state"], row["attempts"],
                   row["created_at"], row["updated_at"], row["app_id"],
                   json.loads(row["result"]) if row["result"] is not None else None, row["reason"],
                   json.loads(decrypt(row["work"])) if row["work"] is not None else None,
                   decrypt(row["summary"]) if row["summary"] is not None else None,
                   tuple(json.loads(row["taught"])) if row["taught"] else ())

    def jobs(self) -> list[Job]:
        j = consolidation_jobs.c
        ids = self.conn.execute(select(j.id).where(self.here(consolidation_jobs)).order_by(j.created_at, j.id)).scalars()
        return [job for job in map(self.get_job, list(ids)) if job is not None]

    def save_job(self, job: Job) -> bool:
        j = consolidation_jobs.c
        where = (self.here(consolidation_jobs), j.id == job.id)
        held = self.conn.execute(select(j.work.is_not(None), j.summary.is_not(None)).where(*where)).first()
        if held is None:
            return False
        self.conn.execute(update(consolidation_jobs).where(*where).values(**self._job_values(job)))
        # Clearing a transcript or a summary is an erasure: the store cleans up after it as after a forget.
        if (held[0] and job.work is None) or (held[1] and job.summary is None):
            self.erased.add("consolidation_jobs")
        return True

    def forget_taught(self, ids: Sequence[str] | None) -> None:
        """Erase the summary of each job of this place that taught one of `ids` (None: any memory),
        whose words this transaction erases: a summary may say them. Cleared as `save_job` clears
        one (an erasure the store cleans up after, as after a forget); the few jobs with a summary
        left (it lives an hour at most) are read, not every job."""
        j = consolidation_jobs.c
        rows = self.conn.execute(select(j.id, j.taught).where(
            self.here(consolidation_jobs), j.summary.is_not(None), j.taught.is_not(None))).all()
        gone = None if ids is None else set(ids)
        doomed = [r.id for r in rows if gone is None or not gone.isdisjoint(json.loads(r.taught))]
        if doomed:
            self.conn.execute(update(consolidation_jobs).where(self.here(consolidation_jobs), j.id.in_(doomed))
                              .values(summary=None))
            self.erased.add("consolidation_jobs")

    def _job_values(self, job: Job) -> dict[str, Any]:
        encrypt = self.store.encrypt
        return {"ref": job.ref, "state": job.state, "attempts": job.attempts, "app_id": job.app_id,
                "result": None if job.result is None else json.dumps(content_free(job.result)), "reason": job.reason,
                "work": None if job.work is None else encrypt(json.dumps(job.work)),
                "summary": None if job.summary is None else encrypt(job.summary),
                "taught": json.dumps(list(job.taught)) if job.taught else None,
                "created_at": job.created_at, "updated_at": job.updated_at}

    # ---------------------------------------------------------------- the whole place, the audit trail

    def purge(self) -> PurgeCounts:
        counts = purge(self.conn, self.store.postgres, self.place.owner_id, [self.place.scope])
        # The place's token went with it: a recall finds nothing to keep (see `place_index`).
        self.changed = self.token_gone = True
        if any(counts.to_json().values()):
            self.erased.update(OWNER_TABLE_NAMES)
        return counts

    def record(self, entry: AuditEntry) -> None:
        AuditLog(self.conn).write(entry)

    # ---------------------------------------------------------------- receipts

    def get_receipt(self, key: str) -> Receipt | None:
        row = self.conn.execute(
            select(idempotency_receipts).where(self.here(idempotency_receipts), idempotency_receipts.c.key == key)
        ).mappings().first()
        if row is None:
            return None
        response = json.loads(self.store.decrypt(row["response"])) if row["response"] is not None else None
        return Receipt(
            key=row["key"], request_hash=row["request_hash"], status=row["status"], response=response,
            memory_ids=tuple(json.loads(row["memory_ids"])), created_at=row["created_at"], redacted=row["redacted"],
            lease_until=row["lease_until"], holder=row["holder"],
        )

    def put_receipt(self, receipt: Receipt) -> bool:
        # Under the place's write lock, so looking first is race-free (and keeps PostgreSQL's
        # transaction clean, which a unique violation would abort).
        if self.get_receipt(receipt.key) is not None:
            return False
        response = None if receipt.response is None else self.store.encrypt(json.dumps(receipt.response))
        self.conn.execute(
            insert(idempotency_receipts).values(
                owner_id=self.place.owner_id, scope=self.place.scope, key=receipt.key,
                request_hash=receipt.request_hash, status=receipt.status, response=response,
                memory_ids=json.dumps(list(receipt.memory_ids)), redacted=receipt.redacted,
                created_at=receipt.created_at or now(), lease_until=receipt.lease_until, holder=receipt.holder,
            )
        )
        return True

    def finish_receipt(self, key: str, status: int, response: dict[str, Any] | None, memory_ids: Sequence[str],
                       holder: str | None = None) -> bool:
        t = idempotency_receipts.c
        held = [] if holder is None else [t.holder == holder]
        return bool(
            self.conn.execute(
                update(idempotency_receipts).where(self.here(idempotency_receipts), t.key == key, *held).values(
                    status=status, memory_ids=json.dumps(list(memory_ids)),
                    response=None if response is None else self.store.encrypt(json.dumps(response)),
                )
            ).rowcount
        )

    def drop_receipt(self, key: str, holder: str | None = None) -> bool:
        t = idempotency_receipts.c
        held = [] if holder is None else [t.holder == holder]
        return bool(self.conn.execute(
            delete(idempotency_receipts).where(self.here(idempotency_receipts), t.key == key, *held)).rowcount)

    def lease_receipt(self, key: str, lease_until: datetime, expired_before: datetime | None = None,
                      holder: str | None = None) -> bool:
        t = idempotency_receipts.c
        where = [self.here(idempotency_receipts), t.key == key, t.status == 0]
        values: dict[str, Any] = {"lease_until": lease_until}
        if expired_before is not None:
            where.append(or_(t.lease_until.is_(None), t.lease_until < expired_before))
            values["holder"] = holder
        elif holder is not None:
            where.append(t.holder == holder)
        return bool(self.conn.execute(update(idempotency_receipts).where(*where).values(**values)).rowcount)

