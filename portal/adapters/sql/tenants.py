"""Tenants: the scopes people's memories live in, each with its AI switch."""

from __future__ import annotations

import threading
import time

from sqlalchemy import or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import RowMapping

from portal.adapters.sql.binding import Bind, reading, writing
from portal.adapters.sql.tables import tenants
from portal.domain.options import new_id, utc_now
from portal.domain.people import Tenant, TenantExists, check_tenant_name
from portal.domain.types import Place

AI_SWITCH_TTL = 5.0


class Tenants:
    """Tenant records and the per-tenant AI switch (read through a short cache, so a switch made
    in one process reaches the others within AI_SWITCH_TTL seconds). On an engine each change
    commits alone; on a unit of work's connection it commits with the unit, which names the
    switches it changed in `switched` (`SqlRecords.unit` then drops this process's cached ones)."""

    def __init__(self, bind: Bind) -> None:
        self.bind = bind
        self._cache: dict[str, tuple[float, tuple[bool, int | None]]] = {}
        self._guard = threading.Lock()
        self.switched: set[str] = set()

    def create(self, name: str, ai_enabled: bool = True) -> Tenant:
        name = check_tenant_name(name)
        tenant = Tenant(new_id(), name, ai_enabled, utc_now())
        with writing(self.bind) as conn:
            # ON CONFLICT DO NOTHING, not a caught violation: in a unit of work on PostgreSQL a
            # violation would abort the whole transaction (and the audit entry meant to go with it).
            dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
            added = dialect_insert(tenants).values(**_values(tenant)).on_conflict_do_nothing().returning(tenants.c.id)
            if conn.execute(added).first() is None:  # RETURNING: an INSERT's rowcount is -1 on PostgreSQL
                raise TenantExists(name)
        return tenant

    def find(self, name_or_id: str) -> Tenant | None:
        with reading(self.bind) as conn:
            row = conn.execute(
                select(tenants).where(or_(tenants.c.id == name_or_id, tenants.c.name == name_or_id))
            ).mappings().first()
        return _tenant(row) if row else None

    def all(self) -> list[Tenant]:
        with reading(self.bind) as conn:
            return [_tenant(r) for r in conn.execute(select(tenants).order_by(tenants.c.name)).mappings()]

    def set_ai(self, tenant_id: str, enabled: bool) -> bool:
        with writing(self.bind) as conn:
            done = conn.execute(update(tenants).where(tenants.c.id == tenant_id).values(ai_enabled=enabled)).rowcount
        self.switched.add(tenant_id)
        self.forget_switch(tenant_id)
        return bool(done)

    def forget_switch(self, tenant_id: str) -> None:
        """Read the tenant's AI switch and defaults from the database next time (they changed)."""
        with self._guard:
            self._cache.pop(tenant_id, None)

    def set_learnt_days(self, tenant_id: str, days: int | None) -> bool:
        """The tenant's default "forget what the assistant learns after N days" (None or 0: never)."""
        with writing(self.bind) as conn:
            done = conn.execute(update(tenants).where(tenants.c.id == tenant_id).values(learnt_days=days or None)).rowcount
        self.switched.add(tenant_id)
        self.forget_switch(tenant_id)
        return bool(done)

    def learnt_days(self, place: Place) -> int | None:
        """The default of this place's tenant (None: never, or a scope that is no tenant)."""
        return self._settings(place.scope)[1]

    def ai_enabled(self, place: Place) -> bool:
        """The tenant's switch for this place's scope; a scope that is no tenant is on."""
        return self._settings(place.scope)[0]

    def _settings(self, scope: str) -> tuple[bool, int | None]:
        """The tenant's AI switch and learnt default, read through the short cache."""
        now = time.monotonic()
        with self._guard:
            cached = self._cache.get(scope)
        if cached and cached[0] > now:
            return cached[1]
        with reading(self.bind) as conn:
            row = conn.execute(select(tenants.c.ai_enabled, tenants.c.learnt_days).where(tenants.c.id == scope)).first()
        found = (True, None) if row is None else (bool(row[0]), row[1])
        with self._guard:
            self._cache[scope] = (now + AI_SWITCH_TTL, found)
        return found


def _values(tenant: Tenant) -> dict[str, object]:
    return {"id": tenant.id, "name": tenant.name, "ai_enabled": tenant.ai_enabled, "created_at": tenant.created_at}


def _tenant(row: RowMapping) -> Tenant:
    return Tenant(row["id"], row["name"], bool(row["ai_enabled"]), row["created_at"], row["learnt_days"])
