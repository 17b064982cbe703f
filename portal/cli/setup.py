"""Setting up: the schema, tenants, API keys, accounts, and the demo.

Each command calls the runtime's stores or services and prints ids and counts, never a person's words.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from portal.adapters.sql.migrate import current_revision
from portal.bootstrap import Runtime
from portal.cli.common import current_runtime, tenant_ref_id, upgrade_schema
from portal.cli.errors import Refusal
from portal.domain.apps import app_of
from portal.domain.errors import Refused
from portal.domain.people import PERMISSIONS, AccountError, TenantExists, User
from portal.domain.types import Place, Source
from portal.services.administration import disable_account, remove_staff_account, set_account_password

DEMO_TENANT = "Demo"
DEMO_OWNER = "demo-ada"
DEMO_EMAIL = "ada@demo.example"
DEMO_NAME = "Ada"
DEMO_PASSWORD = "demo-password"  # noqa: S105 - a published demo account, printed on purpose
DEMO_LEARNT = (("Is thinking about adopting a second cat", "goal", 3),)
DEMO_APP = "Support bot"  # an app of the demo tenant, and the conversation it had with the assistant
DEMO_CONVERSATION = "demo-chat-1"
DEMO_QUESTION = "How does Ada like her answers, and what is she learning?"
DEMO_MEMORIES = (
    ("Prefers short answers with an example first", "preference", 5),
    ("Is learning Spanish before a trip to Seville in May", "goal", 4),
    ("Works as a nurse on night shifts", "fact", 4),
    ("Has a cat called Miso", "fact", 3),
    ("Likes green tea, not coffee", "preference", 3),
    ("Felt anxious about the driving test last week", "feeling", 2),
    ("Ran a first 10 km race in October", "event", 3),
    ("Writes Python and a little C# at work", "fact", 3),
)


@click.group()
def db() -> None:
    """The database schema."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply the migrations (idempotent); creates the vector extension on PostgreSQL.

    Refuses a PostgreSQL server whose pgvector is older than the version the code needs."""
    runtime = current_runtime()
    upgrade_schema(runtime)
    click.echo(f"database at revision {current_revision(runtime.engine)}")


@click.group()
def tenant() -> None:
    """Tenants (scopes) and their AI switch."""


@tenant.command("create")
@click.argument("name")
@click.option("--ai/--no-ai", default=True, help="Whether the assistant's AI is on for this tenant.")
def tenant_create(name: str, ai: bool) -> None:
    """Make a tenant; prints its id."""
    try:
        created = current_runtime().tenants.create(name, ai_enabled=ai)
    except TenantExists:
        raise click.ClickException(f"a tenant named {name!r} exists already") from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(created.id)


@tenant.command("list")
def tenant_list() -> None:
    """Tenants with their id and AI switch."""
    for t in current_runtime().tenants.all():
        click.echo(f"{t.id}\t{t.name}\tai={'on' if t.ai_enabled else 'off'}")


@tenant.command("set")
@click.argument("tenant_ref", metavar="TENANT")
@click.option("--ai/--no-ai", "ai", default=None, help="Switch the assistant's AI on or off for this tenant.")
def tenant_set(tenant_ref: str, ai: bool | None) -> None:
    """Change a tenant (name or id): its AI switch, as `tenant create` sets it."""
    if ai is None:
        raise click.UsageError("say what to change: --ai or --no-ai")
    runtime = current_runtime()
    runtime.tenants.set_ai(tenant_ref_id(runtime, tenant_ref), ai)
    click.echo(f"ai {'on' if ai else 'off'}")


@tenant.command("ai", hidden=True)
@click.argument("tenant_ref")
@click.argument("state", type=click.Choice(["on", "off"]))
@click.pass_context
def tenant_ai(ctx: click.Context, tenant_ref: str, state: str) -> None:
    """The older spelling of `tenant set TENANT --ai/--no-ai`, kept for scripts."""
    ctx.invoke(tenant_set, tenant_ref=tenant_ref, ai=state == "on")


@click.group("api-key")
def api_key() -> None:
    """API keys for the JSON API (shown once, stored hashed, revocable)."""


@api_key.command("create")
@click.option("--tenant", "tenant_ref", required=True, help="Tenant name or id the key is scoped to.")
@click.option(
    "--permission", "permissions", multiple=True, required=True, type=click.Choice(PERMISSIONS),
    help=f"What the key may do: {', '.join(PERMISSIONS)}; repeat for several.",
)
@click.option("--name", default=None, help="A label to recognise the key by.")
def api_key_create(tenant_ref: str, permissions: tuple[str, ...], name: str | None) -> None:
    """Make a key; prints it alone on stdout. It is not stored and cannot be shown again."""
    runtime = current_runtime()
    try:
        _, token = runtime.api_keys.create(tenant_ref_id(runtime, tenant_ref), permissions, name=name)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(token)


@api_key.command("list")
@click.option("--tenant", "tenant_ref", default=None, help="Only this tenant's keys (name or id).")
def api_key_list(tenant_ref: str | None) -> None:
    """Keys with id, tenant, name, prefix, permissions, creation and revocation; never the secret."""
    runtime = current_runtime()
    tenant_id = tenant_ref_id(runtime, tenant_ref) if tenant_ref is not None else None
    names = {t.id: t.name for t in runtime.tenants.all()}
    for key in runtime.api_keys.list(tenant_id):
        revoked = f"revoked={key.revoked_at.isoformat(timespec='seconds')}" if key.revoked_at else "active"
        click.echo(
            f"{key.id}\t{names.get(key.tenant_id, key.tenant_id)}\t{key.name or '-'}\t{key.prefix}"
            f"\t{','.join(sorted(key.permissions))}\tcreated={key.created_at.isoformat(timespec='seconds')}\t{revoked}"
        )


@api_key.command("revoke")
@click.argument("key_id")
def api_key_revoke(key_id: str) -> None:
    """Revoke a key for good: requests bearing it are refused from now on."""
    if not current_runtime().api_keys.revoke(key_id):
        raise click.ClickException(f"no active API key {key_id!r}")
    click.echo(f"revoked {key_id}")


@click.command()
@click.option("--url", default="http://127.0.0.1:8000/", show_default=True,
              help="Where the portal will be served, for the sign-in hint (`make run` passes its HOST and PORT).")
def demo(url: str) -> None:
    """A demo tenant and a demo person with memories; prints how to look at them."""
    runtime = current_runtime()
    upgrade_schema(runtime)
    found = runtime.tenants.find(DEMO_TENANT) or runtime.tenants.create(DEMO_TENANT)
    place = Place(DEMO_OWNER, found.id)
    background = {"origin": "inferred", "channel": "background",
                  "sources": (Source("consolidation", "demo-conversation"),)}
    for (text, kind, importance), settings in [*((m, {}) for m in DEMO_MEMORIES), *((m, background) for m in DEMO_LEARNT)]:
        try:
            runtime.service.remember(place, text, kind=kind, importance=importance, on_duplicate="reinforce", **settings)
        except Refused:  # the demo person paused learning in the portal: what was kept stays as it is
            pass
    kept = len(runtime.service.list(place, limit=100).items)
    try:
        runtime.accounts.create(DEMO_EMAIL, DEMO_NAME, found.id, "member", DEMO_PASSWORD, owner_id=DEMO_OWNER)
    except AccountError as exc:
        if exc.code != "email_taken":
            raise click.ClickException(exc.code) from None
    given = demo_conversation(runtime, place)
    click.echo(f"demo tenant {found.id} ({DEMO_TENANT}); person {DEMO_OWNER} has {kept} memories")
    click.echo(f"app {DEMO_APP} was given {given} memories in a conversation (Connected apps, Recent conversations)")
    click.echo(f"sign in at {url} as {DEMO_EMAIL} with the password {DEMO_PASSWORD}")


def demo_conversation(runtime: Runtime, place: Place) -> int:
    """An app of the demo tenant (a key named DEMO_APP that only reads, made once) that recalled the
    person's memories in one conversation, through the service as the API does for an app sending
    `conversation_ref`: the person's Connected apps, Recent conversations and each memory's page
    show it. Answers how many memories the conversation was given."""
    mine = [k for k in runtime.api_keys.list(place.scope) if k.name == DEMO_APP and k.revoked_at is None]
    key = mine[0] if mine else runtime.api_keys.create(place.scope, ("memories:read",), name=DEMO_APP)[0]
    try:
        hits = runtime.service.for_app(app_of(key), DEMO_CONVERSATION).recall(place, DEMO_QUESTION, limit=3)
    except Refused:  # the demo person blocked the app in the portal: it is given nothing
        return 0
    runtime.service.conversations(place, 1)  # written now, not with the next batch (portal.services.use_log)
    return len(hits)


@click.group()
def user() -> None:
    """Portal accounts."""


JSON = click.option("--json", "as_json", is_flag=True, help="Answer as JSON (errors too, with their code).")


def answer(as_json: bool, data: dict[str, Any], text: str) -> None:
    click.echo(json.dumps({"ok": True, **data}) if as_json else text)


def read_password(from_stdin: bool, prompt: str) -> str:
    """The password: the first line of standard input with --password-stdin (a script's); else
    typed on the terminal, hidden, and typed again to confirm (the prompts on standard error, so
    that `ID=$(memory-portal user create ...)` captures the id alone). Piped input is never read
    as a password unless --password-stdin says so."""
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    if not sys.stdin.isatty():
        raise click.ClickException("no terminal to ask the password on: give it on standard input with --password-stdin")
    typed: str = click.prompt(prompt, hide_input=True, confirmation_prompt=True, err=True)
    return typed


def account_by_email(runtime: Runtime, email: str, as_json: bool) -> User:
    wanted = email.strip().lower()
    found = [u for u in runtime.accounts.find(wanted) if u.email == wanted]
    if not found:
        raise Refusal("no_account", as_json)
    return found[0]


@user.command("create")
@click.option("--email", required=True)
@click.option("--name", required=True)
@click.option("--tenant", "tenant_ref", required=True, help="Tenant name or id.")
@click.option("--role", type=click.Choice(["member", "staff", "admin"]), default="member", show_default=True)
@click.option("--owner-id", default=None, help="The id the assistant backend keeps this person's memories under.")
@click.option("--language", type=click.Choice(["en", "fr"]), default=None,
              help="The portal's language for this person; without it, none is chosen: their browser's, until they pick one.")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from standard input (for scripts; on a terminal it is asked for, twice).")
@JSON
def user_create(
    email: str, name: str, tenant_ref: str, role: str, owner_id: str | None, language: str | None, password_stdin: bool,
    as_json: bool,
) -> None:
    """Make an account; prints its owner id (the account's own id unless --owner-id is given). The
    password is asked for on the terminal (hidden, twice), or read from standard input with
    --password-stdin."""
    runtime = current_runtime()
    password = read_password(password_stdin, "Password")
    try:
        created = runtime.accounts.create(email, name, tenant_ref_id(runtime, tenant_ref, as_json), role, password,
                                          owner_id=owner_id, language=language)
    except AccountError as exc:
        raise Refusal(exc.code, as_json) from None
    answer(as_json, {"id": created.id, "owner_id": created.owner_id}, created.owner_id)


@user.command("list")
@click.option("--tenant", "tenant_ref", default=None, help="Only this tenant's accounts (name or id).")
@click.option("--staff", "staff_only", is_flag=True, help="Only staff and admin accounts.")
@click.option("--find", "query", default="", help="Only accounts whose e-mail or name holds this.")
@JSON
def user_list(tenant_ref: str | None, staff_only: bool, query: str, as_json: bool) -> None:
    """Accounts: e-mail, name, role, tenant (its name), state and last sign-in, under a header line,
    one per line (at most 50); with --json, each with its id and its tenant's id too."""
    runtime = current_runtime()
    tenants = [tenant_ref_id(runtime, tenant_ref, as_json)] if tenant_ref else None
    found = runtime.accounts.staff(tenants) if staff_only else runtime.accounts.find(query, tenants)
    if staff_only and query:
        found = [u for u in found if query.lower() in u.email or query.lower() in u.name.lower()]
    names = {t.id: t.name for t in runtime.tenants.all()}
    rows = [{"id": u.id, "email": u.email, "name": u.name, "role": u.role, "tenant_id": u.tenant_id,
             "tenant": names.get(u.tenant_id) if u.tenant_id else None,
             "state": "disabled" if u.disabled else "active",
             "last_visit_at": u.last_visit_at.isoformat() if u.last_visit_at else None} for u in found]
    lines = ["\t".join(("e-mail", "name", "role", "tenant", "state", "last sign-in"))]
    lines += ["\t".join(str(r[k] or ("never" if k == "last_visit_at" else "-"))
                        for k in ("email", "name", "role", "tenant", "state", "last_visit_at")) for r in rows]
    answer(as_json, {"accounts": rows}, "\n".join(lines))


@user.command("set-password")
@click.option("--email", required=True)
@click.option("--password-stdin", is_flag=True,
              help="Read the new password from standard input (for scripts; on a terminal it is asked for, twice).")
@JSON
def user_set_password(email: str, password_stdin: bool, as_json: bool) -> None:
    """Give an account a new password (enabling it again if it was disabled); every session it has
    is ended. Asked for on the terminal (hidden, twice), or read from standard input with
    --password-stdin."""
    runtime = current_runtime()
    found = account_by_email(runtime, email, as_json)
    password = read_password(password_stdin, "New password")
    with runtime.records.unit() as uow:  # a refusal: a sentence, or its code with --json (errors_as_one_line)
        set_account_password(uow, found, password, None, "operator")
        uow.commit()
    answer(as_json, {"id": found.id}, f"password changed for {found.email}; its sessions have ended")


@user.command("disable")
@click.option("--email", required=True)
@JSON
def user_disable(email: str, as_json: bool) -> None:
    """No password opens the account any more and its sessions end (set-password enables it)."""
    runtime = current_runtime()
    found = account_by_email(runtime, email, as_json)
    with runtime.records.unit() as uow:  # a person's account is refused, as in the console
        disable_account(uow, found, None, "operator")
        uow.commit()
    answer(as_json, {"id": found.id}, f"{found.email} is disabled and signed out everywhere")


@user.command("remove")
@click.option("--email", required=True)
@JSON
def user_remove(email: str, as_json: bool) -> None:
    """Remove a staff or admin account. A person's account goes with their data: `purge-owner`, or
    an erasure request in the console."""
    runtime = current_runtime()
    found = account_by_email(runtime, email, as_json)
    with runtime.records.unit() as uow:  # and what its own place holds, as the console does
        remove_staff_account(uow, found, None, "operator")
        uow.commit()
    answer(as_json, {"id": found.id}, f"{found.email} was removed")


COMMANDS = (db, tenant, api_key, demo, user)
