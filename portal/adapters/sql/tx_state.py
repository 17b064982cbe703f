"""What the mixins of a place transaction (`SqlTx`: `PlaceRecords`, `PlaceWriting`) share: the
attributes `SqlTx` sets, declared once so each mixin is type-checked against them."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection

from portal.domain.types import Place

if TYPE_CHECKING:
    from portal.adapters.sql.store import SqlStore


class PlaceTxState:
    conn: Connection
    place: Place
    bound: dict[str, str]
    store: SqlStore
    changed: bool
    now: datetime  # the store's clock when the transaction began (what expired by then is left out)
    # The tables this transaction erased words from (deleted, or overwrote, rows holding them); its
    # commit then lets the store clean up what the database keeps of them besides (SqlStore.after_erasure).
    erased: set[str]
