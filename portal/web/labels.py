"""What the pages say for the codes the product keeps, and for its dates, in the page's language.

The stores and the audit log keep codes (`completed`, `person.erased_all`, `app_controls`,
`access_request`): stable, content-free and searchable. A person reads none of them: every code a
page shows goes through one of the labels below, and every date through `day`, `moment` or
`clock` (Flask-Babel, in the language the page speaks). A code with no label yet is shown as it is,
which tests/staff/test_every_page_speaks.py finds on a rendered page.

Templates call them as globals (`state_label(r.state)`, `day(r.received_at)`): `install` adds them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

from flask import Flask
from flask_babel import force_locale, format_date, format_datetime, format_time, get_locale
from flask_babel import gettext as _

from portal.domain.text import fold


def day(value: date | datetime, length: str = "medium") -> str:
    """A date as the page's language writes it ("Dec 2, 2026", "2 déc. 2026"; `length="long"` in a
    sentence: "December 2, 2026", "2 décembre 2026")."""
    return format_date(value, length)


def moment(value: datetime, seconds: bool = False) -> str:
    """A date and a time of day ("Dec 2, 2026, 2:05 PM", "2 déc. 2026, 14:05"), in UTC."""
    locale = get_locale()
    if locale is None:  # outside a request: the English forms
        return format_datetime(value, "medium")
    time_pattern = locale.time_formats["medium" if seconds else "short"].pattern
    pattern = locale.datetime_formats["medium"].format(time_pattern, locale.date_formats["medium"].pattern)
    return format_datetime(value, pattern)


def clock(value: datetime) -> str:
    """A time of day ("2:05 PM", "14:05"), in UTC."""
    return format_time(value, "short")


def _labelled(labels: Callable[[], dict[str, str]]) -> Callable[[str | None], str]:
    """A label function over a table made per call (the texts are translated per request, never
    at import); a code without a label is shown as it is."""
    def label(code: str | None) -> str:
        if code is None:
            return "—"
        return labels().get(code, code)
    return label


request_state_label = _labelled(lambda: {"open": _("Open"), "completed": _("Done")})

requested_by_label = _labelled(lambda: {"person": _("The person, from the portal"),
                                        "staff": _("Support, for the person")})

reason_label = _labelled(lambda: {"access_request": _("Access request"),
                                  "rectification_request": _("Rectification request"),
                                  "complaint": _("Complaint"), "legal_obligation": _("Legal obligation")})

# What an erasure, an "erase everything", an import or a removal counted (PurgeCounts and the
# import's counts): what each line of the audit log and of an erasure request says it removed.
count_label = _labelled(lambda: {
    "memories": _("Memories"), "revisions": _("Earlier wordings"), "settings": _("Pause setting"),
    "refs": _("Conversation references"), "receipts": _("Stored answers to apps"),
    "tombstones": _("Marks of forgotten memories"), "app_uses": _("Connected apps' uses"),
    "app_controls": _("Connected apps' decisions"), "jobs": _("Learning jobs"), "accounts": _("Accounts"),
    "added": _("Added"), "duplicates": _("Kept already"), "refused": _("Not imported"),
    "earlier_refused": _("Earlier wordings left out"),
})

role_label = _labelled(lambda: {"member": _("Person"), "staff": _("Support staff"), "admin": _("Administrator"),
                                "api_key": _("API key"), "operator": _("Operator")})

memory_state_label = _labelled(lambda: {"active": _("Kept"), "archived": _("Archived")})

# A connected app as staff see it: paused or blocked by the person, or neither.
app_control_label = _labelled(lambda: {"paused": _("paused"), "blocked": _("blocked"), "": _("allowed")})

permission_label = _labelled(lambda: {
    "memories:read": _("Read memories"), "memories:write": _("Write memories"),
    "memories:forget": _("Forget memories"), "consolidate": _("Learn from conversations"),
    "erasure": _("Erase a person"),
})


def audit_actions() -> dict[str, str]:
    """Every action the audit log keeps, by code, in the page's language."""
    return {
        "memories.viewed": _("Opened the memories"), "access.exported": _("Exported for an access request"),
        "erasure.logged": _("Logged an erasure request"), "erasure.requested": _("Asked to delete their account"),
        "erasure.completed": _("Carried out an erasure"),
        "tenant.created": _("Created a tenant"), "tenant.ai_on": _("Switched the AI on"),
        "tenant.ai_off": _("Switched the AI off"),
        "tenant.learnt_days_set": _("Set how long what the assistant learns is kept"),
        "memory.use_changed": _("Changed which apps may use a memory"),
        "person.learnt_days_set": _("Chose how long what the assistant learns is kept"),
        "member.created": _("Created a person's account"), "staff.created": _("Created a staff account"),
        "admin.created": _("Created an administrator's account"),
        "api_key.created": _("Created an API key"), "api_key.revoked": _("Revoked an API key"),
        "sessions.ended": _("Signed an account out everywhere"),
        "staff.disabled": _("Disabled a staff account"), "staff.password_set": _("Set a staff account's password"),
        "account.password_set": _("Set an account's password"), "staff.removed": _("Removed a staff account"),
        "person.paused": _("Paused memory"), "person.resumed": _("Resumed memory"),
        "person.erased_all": _("Erased everything"), "person.exported": _("Downloaded their data"),
        "person.imported": _("Imported memories"), "person.import_undone": _("Took an import back"),
        "person.forgot_matching": _("Forgot everything about a subject"),
        "person.app_paused": _("Paused an app"), "person.app_blocked": _("Blocked an app"),
        "person.app_resumed": _("Let an app use their memory again"),
        "person.erased": _("Erased by an app"), "person.purged": _("Erased from the command line"),
    }


audit_action_label = _labelled(audit_actions)


def audit_actions_named(words: str) -> list[str]:
    """The actions whose words, as the log shows them in the page's language or in English, hold
    `words` (case, accents and runs of spaces aside): staff filter the log by what they read."""
    wanted = fold(" ".join(words.split()))
    if not wanted:
        return []
    with force_locale("en"):
        english = audit_actions()
    shown = audit_actions()
    return [code for code, label in shown.items() if wanted in fold(label) or wanted in fold(english[code])]


LABELS: dict[str, Callable[..., str]] = {
    "day": day, "moment": moment, "clock": clock,
    "request_state_label": request_state_label, "requested_by_label": requested_by_label,
    "reason_label": reason_label, "count_label": count_label, "role_label": role_label,
    "memory_state_label": memory_state_label, "app_control_label": app_control_label,
    "permission_label": permission_label, "audit_action_label": audit_action_label,
}


def install(app: Flask) -> None:
    """Make the labels and the date formats globals of the app's templates."""
    app.jinja_env.globals.update(LABELS)
