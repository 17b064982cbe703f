"""A conversation is the app's that had it: the part of `portal.services.apps.AppTx` that claims and
looks up a conversation's ref under the app's id (`StoreTx.claim_ref`'s `app_id`).

Two apps of a tenant may number their conversations alike ("conv-1"): under the person alone, the
second app's conversation would be answered `already` and never learnt, the answer would tell it
that another app had a conversation of that ref, and a paused app (whose conversations are marked
done, nothing learnt) would burn the ref for every app. Every claim an app's transaction makes,
renews, finishes, looks up or releases is its own; the person's own conversations (no app) are
under "".
"""

from __future__ import annotations

from datetime import datetime

from portal.domain.apps import App
from portal.ports import StoreTx


class AppRefs:
    """The refs of an app's transaction, under its app's id; `AppTx` is one."""

    _tx: StoreTx
    _app: App

    def claim_ref(self, ref: str, at: datetime, lease_until: datetime | None = None, holder: str | None = None) -> bool:
        return self._tx.claim_ref(ref, at, lease_until, holder, app_id=self._app.id)

    def renew_ref(self, ref: str, holder: str, lease_until: datetime) -> bool:
        return self._tx.renew_ref(ref, holder, lease_until, app_id=self._app.id)

    def finish_ref(self, ref: str, holder: str) -> bool:
        return self._tx.finish_ref(ref, holder, app_id=self._app.id)

    def holds_ref(self, ref: str, holder: str) -> bool:
        return self._tx.holds_ref(ref, holder, app_id=self._app.id)

    def release_ref(self, ref: str) -> bool:
        return self._tx.release_ref(ref, app_id=self._app.id)


__all__ = ["AppRefs"]
