"""A person's own account: signing in and out, the session a cookie stands for, the language of
the portal. Framework-free; the sign-in views are thin shells over `People`."""

from __future__ import annotations

from dataclasses import replace

from portal.domain.errors import Refused
from portal.domain.options import Clock, utc_now
from portal.domain.people import LANGUAGES, User
from portal.ports import Records


class People:
    def __init__(self, records: Records, clock: Clock = utc_now) -> None:
        self.records = records
        self.clock = clock

    def sign_in(self, email: str, password: str) -> User | None:
        """The account for these credentials, its visit recorded (the staff page's "Last
        activity"), or None; an unknown e-mail costs what a wrong password does."""
        user = self.records.accounts.authenticate(email, password)
        if user is None:
            return None
        now = self.clock()
        with self.records.unit() as uow:
            uow.accounts.mark_visit(user.id, now)
            uow.commit()
        return replace(user, last_visit_at=now)

    def session(self, session_id: str) -> User | None:
        """The account a sign-in session (`User.get_id`) stands for, or None once its epoch has
        passed: the account signed out, changed its password or had its sessions ended."""
        user_id, _, epoch = str(session_id).partition(":")
        user = self.records.accounts.get(user_id)
        if user is None or not epoch.isdigit() or int(epoch) != user.session_epoch:
            return None
        return user

    def sign_out(self, person: User) -> None:
        """Every session of the account ends, not only this browser's: a cookie copied before (on
        another device, a stolen copy) opens nothing after it."""
        with self.records.unit() as uow:
            uow.accounts.end_sessions(person.id)
            uow.commit()

    def set_language(self, person: User, language: str) -> None:
        if language not in LANGUAGES:
            raise Refused("invalid_language")
        with self.records.unit() as uow:
            uow.accounts.set_language(person.id, language)
            uow.commit()
