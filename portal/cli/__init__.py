"""The `memory-portal` command line (also under `flask --app portal ...`).

Each command builds the runtime from the environment, calls one service function and prints
ids and counts, never a person's words (except `export`, whose whole point is to hand them over).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from portal.bootstrap import Runtime, build_runtime
from portal.config import ConfigError, load_config
from portal.domain.audit import AuditNote
from portal.domain.types import Place, Saved, Source

DEMO_TENANT = "Demo"
DEMO_OWNER = "demo-ada"
DEMO_EMAIL = "ada@demo.example"
DEMO_NAME = "Ada"
DEMO_PASSWORD = "demo-password"  # noqa: S105 - a published demo account, printed on purpose
DEMO_LEARNT = (("Is thinking about adopting a second cat", "goal", 3),)
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


def _runtime() -> Runtime:
    """The app's runtime under `flask`, or one built from the environment for the console script."""
    ctx = click.get_current_context()
    root = ctx.find_root()
    if root.obj is None:
        root.obj = {}
    if "runtime" not in root.obj:
        try:
            from flask import current_app

            root.obj["runtime"] = current_app.extensions["memory_runtime"]
        except RuntimeError:
            try:
                root.obj["runtime"] = build_runtime(load_config())
            except ConfigError as exc:
                raise click.ClickException(str(exc)) from None
    runtime: Runtime = root.obj["runtime"]
    return runtime


def _tenant_id(runtime: Runtime, name_or_id: str | None) -> str:
    if name_or_id is None:
        return ""
    tenant = runtime.tenants.find(name_or_id)
    if tenant is None:
        raise click.ClickException(f"no tenant named or numbered {name_or_id!r}")
    return tenant.id


@click.group(name="memory-portal")
def main() -> None:
    """memory portal: what an AI assistant remembers about each person."""


@main.group()
def db() -> None:
    """The database schema."""


def _upgrade(runtime: Runtime) -> None:
    """Migrate to head; a PostgreSQL whose pgvector is missing or too old is a clear error."""
    from portal.adapters.sql.migrate import upgrade
    from portal.adapters.sql.vector_extension import VectorExtensionError

    try:
        upgrade(runtime.engine)
    except VectorExtensionError as exc:
        raise click.ClickException(str(exc)) from None


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply the migrations (idempotent); creates the vector extension on PostgreSQL.

    Refuses a PostgreSQL server whose pgvector is older than the version the code needs."""
    from portal.adapters.sql.migrate import current_revision

    runtime = _runtime()
    _upgrade(runtime)
    click.echo(f"database at revision {current_revision(runtime.engine)}")


@main.group()
def tenant() -> None:
    """Tenants (scopes) and their AI switch."""


@tenant.command("create")
@click.argument("name")
@click.option("--ai/--no-ai", default=True, help="Whether the assistant's AI is on for this tenant.")
def tenant_create(name: str, ai: bool) -> None:
    """Make a tenant; prints its id."""
    from portal.adapters.sql.tenants import TenantExists

    try:
        created = _runtime().tenants.create(name, ai_enabled=ai)
    except TenantExists:
        raise click.ClickException(f"a tenant named {name!r} exists already") from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(created.id)


@tenant.command("list")
def tenant_list() -> None:
    """Tenants with their id and AI switch."""
    for t in _runtime().tenants.all():
        click.echo(f"{t.id}\t{t.name}\tai={'on' if t.ai_enabled else 'off'}")


@tenant.command("ai")
@click.argument("tenant_ref")
@click.argument("state", type=click.Choice(["on", "off"]))
def tenant_ai(tenant_ref: str, state: str) -> None:
    """Switch the assistant's AI on or off for a tenant."""
    runtime = _runtime()
    runtime.tenants.set_ai(_tenant_id(runtime, tenant_ref), state == "on")
    click.echo(f"ai {state}")


@main.group("api-key")
def api_key() -> None:
    """API keys for the JSON API (shown once, stored hashed, revocable)."""


@api_key.command("create")
@click.option("--tenant", "tenant_ref", required=True, help="Tenant name or id the key is scoped to.")
@click.option(
    "--permission", "permissions", multiple=True, required=True,
    help="memories:read, memories:write, consolidate or erasure; repeat for several.",
)
@click.option("--name", default=None, help="A label to recognise the key by.")
def api_key_create(tenant_ref: str, permissions: tuple[str, ...], name: str | None) -> None:
    """Make a key; prints it alone on stdout. It is not stored and cannot be shown again."""
    from portal.adapters.sql.api_keys import ApiKeys

    runtime = _runtime()
    try:
        _, token = ApiKeys(runtime.engine).create(_tenant_id(runtime, tenant_ref), permissions, name=name)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(token)


@api_key.command("list")
@click.option("--tenant", "tenant_ref", default=None, help="Only this tenant's keys (name or id).")
def api_key_list(tenant_ref: str | None) -> None:
    """Keys with id, tenant, name, prefix, permissions, creation and revocation; never the secret."""
    from portal.adapters.sql.api_keys import ApiKeys

    runtime = _runtime()
    tenant_id = _tenant_id(runtime, tenant_ref) if tenant_ref is not None else None
    names = {t.id: t.name for t in runtime.tenants.all()}
    for key in ApiKeys(runtime.engine).list(tenant_id):
        revoked = f"revoked={key.revoked_at.isoformat(timespec='seconds')}" if key.revoked_at else "active"
        click.echo(
            f"{key.id}\t{names.get(key.tenant_id, key.tenant_id)}\t{key.name or '-'}\t{key.prefix}"
            f"\t{','.join(sorted(key.permissions))}\tcreated={key.created_at.isoformat(timespec='seconds')}\t{revoked}"
        )


@api_key.command("revoke")
@click.argument("key_id")
def api_key_revoke(key_id: str) -> None:
    """Revoke a key for good: requests bearing it are refused from now on."""
    from portal.adapters.sql.api_keys import ApiKeys

    if not ApiKeys(_runtime().engine).revoke(key_id):
        raise click.ClickException(f"no active API key {key_id!r}")
    click.echo(f"revoked {key_id}")


@main.command()
@click.option("--url", default="http://127.0.0.1:8000/", show_default=True,
              help="Where the portal will be served, for the sign-in hint (`make run` passes its HOST and PORT).")
def demo(url: str) -> None:
    """A demo tenant and a demo person with memories; prints how to look at them."""
    from portal.adapters.sql.accounts import AccountError

    runtime = _runtime()
    _upgrade(runtime)
    found = runtime.tenants.find(DEMO_TENANT) or runtime.tenants.create(DEMO_TENANT)
    place = Place(DEMO_OWNER, found.id)
    kept = 0
    for text, kind, importance in DEMO_MEMORIES:
        outcome = runtime.service.remember(place, text, kind=kind, importance=importance, on_duplicate="reinforce")
        kept += isinstance(outcome, Saved)
    for text, kind, importance in DEMO_LEARNT:
        outcome = runtime.service.remember(
            place, text, kind=kind, importance=importance, origin="inferred", channel="background",
            on_duplicate="reinforce", sources=(Source("consolidation", "demo-conversation"),),
        )
        kept += isinstance(outcome, Saved)
    try:
        runtime.accounts.create(DEMO_EMAIL, DEMO_NAME, found.id, "member", DEMO_PASSWORD, owner_id=DEMO_OWNER)
    except AccountError as exc:
        if exc.code != "email_taken":
            raise click.ClickException(exc.code) from None
    click.echo(f"demo tenant {found.id} ({DEMO_TENANT}); person {DEMO_OWNER} has {kept} memories")
    click.echo(f"sign in at {url} as {DEMO_EMAIL} with the password {DEMO_PASSWORD}")


@main.group()
def user() -> None:
    """Portal accounts."""


@user.command("create")
@click.option("--email", required=True)
@click.option("--name", required=True)
@click.option("--tenant", "tenant_ref", required=True, help="Tenant name or id.")
@click.option("--role", type=click.Choice(["member", "staff", "admin"]), default="member", show_default=True)
@click.option("--owner-id", default=None, help="The id the assistant backend keeps this person's memories under.")
@click.option("--language", type=click.Choice(["en", "fr"]), default="en", show_default=True)
@click.option("--password-stdin", is_flag=True, required=True, help="Read the password from standard input.")
def user_create(
    email: str, name: str, tenant_ref: str, role: str, owner_id: str | None, language: str, password_stdin: bool
) -> None:
    """Make an account; prints its owner id (the account's own id unless --owner-id is given)."""
    from portal.adapters.sql.accounts import AccountError

    runtime = _runtime()
    password = sys.stdin.readline().rstrip("\r\n")
    try:
        created = runtime.accounts.create(email, name, _tenant_id(runtime, tenant_ref), role, password,
                                          owner_id=owner_id, language=language)
    except AccountError as exc:
        raise click.ClickException(exc.code) from None
    click.echo(created.owner_id)


@user.command("set-password")
@click.option("--email", required=True)
@click.option("--password-stdin", is_flag=True, required=True, help="Read the new password from standard input.")
def user_set_password(email: str, password_stdin: bool) -> None:
    """Give an account a new password; every session it has is ended."""
    from portal.adapters.sql.accounts import AccountError

    runtime = _runtime()
    found = [u for u in runtime.accounts.find(email) if u.email == email.strip().lower()]
    if not found:
        raise click.ClickException(f"no account with the e-mail {email!r}")
    password = sys.stdin.readline().rstrip("\r\n")
    try:
        runtime.accounts.set_password(found[0].id, password)
    except AccountError as exc:
        raise click.ClickException(exc.code) from None
    click.echo(f"password changed for {found[0].id}; its sessions have ended")


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, type=int, show_default=True)
@click.option("--workers", type=int, default=None, help="Worker processes (default: WEB_CONCURRENCY or 2).")
@click.option("--timeout", type=int, default=60, show_default=True)
def serve(host: str, port: int, workers: int | None, timeout: int) -> None:
    """Run the app on gunicorn (a production WSGI server), not Flask's debug server."""
    from portal.serve import run

    try:
        load_config()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    count = workers or int(os.environ.get("WEB_CONCURRENCY", "2"))
    run(host, port, count, timeout)


@main.command()
@click.option("--limit", type=int, default=None, help="Embed at most this many memories.")
def reindex(limit: int | None) -> None:
    """Give a vector to memories without one (or of another model); resumable."""
    from tqdm import tqdm

    runtime = _runtime()
    if runtime.service.embedder is None:
        raise click.ClickException("no embedder configured (MEMORY_EMBEDDER=none)")
    with tqdm(unit="memory", file=sys.stderr, disable=None) as bar:
        done = runtime.service.reindex(limit=limit, progress=bar.update)
    click.echo(f"embedded {done} memories")


@main.command("purge-owner")
@click.argument("owner_id")
@click.option("--tenant", "tenant_ref", default=None,
              help="Only in this tenant (name or id). Owner ids are per tenant: without it, every tenant's "
                   "OWNER_ID is erased, which is right only when the host's owner ids are unique across tenants.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def purge_owner(owner_id: str, tenant_ref: str | None, yes: bool) -> None:
    """Erase everything kept about OWNER_ID, in one tenant (--tenant) or in every tenant."""
    runtime = _runtime()
    scopes = [_tenant_id(runtime, tenant_ref)] if tenant_ref is not None else None
    if not yes:
        where = f"in tenant {tenant_ref}" if scopes else "in EVERY tenant (owner ids are per tenant)"
        click.confirm(f"Erase every memory of {owner_id} {where}?", abort=True)
    counts = runtime.service.purge_owner(owner_id, scopes, audit=AuditNote(None, "operator", "person.purged"))
    runtime.store.settle(60)  # the cleaning up after the erasure, before the process ends
    click.echo(json.dumps(counts.to_json()))


@main.command()
@click.argument("owner_id")
@click.option("--tenant", "tenant_ref", default=None, help="Tenant name or id (default: no scope).")
def export(owner_id: str, tenant_ref: str | None) -> None:
    """Print everything kept about OWNER_ID in one tenant, as JSON."""
    runtime = _runtime()
    data = runtime.service.export(Place(owner_id, _tenant_id(runtime, tenant_ref)))
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _add_operations() -> None:
    from portal.cli.operations import prune, rotate_keys

    main.add_command(prune)
    main.add_command(rotate_keys)


_add_operations()


def register(app: Any) -> None:
    """Make the same commands available as `flask --app portal <command>`."""
    for command in main.commands.values():
        app.cli.add_command(command)
