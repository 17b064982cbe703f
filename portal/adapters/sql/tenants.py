"""Tenants: the scopes people's memories live in, each with its AI switch."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, or_, select, update
from sqlalchemy.engine import Engine, RowMapping
from sqlalchemy.exc import IntegrityError

from portal.adapters.sql.tables import tenants
from portal.domain.options import new_id, utc_now
from portal.domain.types import Place
from portal.inputs import is_valid_text

AI_SWITCH_TTL = 5.0


@dataclass(frozen=True, slots=True)
class Tenant:
    id: str
    name: str
    ai_enabled: bool
    created_at: datetime


class TenantExists(ValueError):
    code = "tenant_exists"


class Tenants:
    """Tenant records and the per-tenant AI switch (read through a short cache, so a switch made
    in one process reaches the others within AI_SWITCH_TTL seconds)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._cache: dict[str, tuple[float, bool]] = {}
        self._guard = threading.Lock()

    def create(self, name: str, ai_enabled: bool = True) -> Tenant:
        name = name.strip()
        if not name or len(name) > 200 or not is_valid_text(name):
            raise ValueError("a tenant needs a name of at most 200 characters")
        tenant = Tenant(new_id(), name, ai_enabled, utc_now())
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(tenants).values(**_values(tenant)))
        except IntegrityError:
            raise TenantExists(name) from None
        return tenant

    def find(self, name_or_id: str) -> Tenant | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(tenants).where(or_(tenants.c.id == name_or_id, tenants.c.name == name_or_id))
            ).mappings().first()
        return _tenant(row) if row else None

    def all(self) -> list[Tenant]:
        with self.engine.connect() as conn:
            return [_tenant(r) for r in conn.execute(select(tenants).order_by(tenants.c.name)).mappings()]

    def set_ai(self, tenant_id: str, enabled: bool) -> bool:
        with self.engine.begin() as conn:
            done = conn.execute(update(tenants).where(tenants.c.id == tenant_id).values(ai_enabled=enabled)).rowcount
        with self._guard:
            self._cache.pop(tenant_id, None)
        return bool(done)

    def ai_enabled(self, place: Place) -> bool:
        """The tenant's switch for this place's scope; a scope that is no tenant is on."""
        now = time.monotonic()
        with self._guard:
            cached = self._cache.get(place.scope)
        if cached and cached[0] > now:
            return cached[1]
        with self.engine.connect() as conn:
            value = conn.execute(select(tenants.c.ai_enabled).where(tenants.c.id == place.scope)).scalar()
        enabled = True if value is None else bool(value)
        with self._guard:
            self._cache[place.scope] = (now + AI_SWITCH_TTL, enabled)
        return enabled


def _values(tenant: Tenant) -> dict[str, object]:
    return {"id": tenant.id, "name": tenant.name, "ai_enabled": tenant.ai_enabled, "created_at": tenant.created_at}


def _tenant(row: RowMapping) -> Tenant:
    return Tenant(row["id"], row["name"], bool(row["ai_enabled"]), row["created_at"])
