"""What every command shares: the runtime, tenant references, owner ids and the schema. The one
answer to errors (`Refusal`, one line) is `portal.cli.errors`."""

from __future__ import annotations

import shlex

import click
from flask import current_app

from portal.adapters.sql.migrate import upgrade
from portal.adapters.sql.ref_keys import KeysNeeded
from portal.adapters.sql.vector_extension import VectorExtensionError
from portal.bootstrap import Runtime, build_runtime
from portal.cli.errors import RUNTIME, Refusal
from portal.config import ConfigError, load_config
from portal.inputs import is_valid_id


def current_runtime(check_keys: bool = True) -> Runtime:
    """The app's runtime under `flask`, or one built from the environment for the console script
    (`check_keys=False`: without the encryption keys check, for `rotate-keys` alone)."""
    # In the invocation's `meta` (shared by every context of one command line), not in `obj`:
    # under flask, `obj` is flask's own ScriptInfo.
    ctx = click.get_current_context()
    meta = ctx.meta
    if RUNTIME not in meta:
        try:
            meta[RUNTIME] = current_app.extensions["memory_runtime"]
        except RuntimeError:  # no app context: the console script
            try:
                built = build_runtime(load_config(), check_keys=check_keys)
            except ConfigError as exc:
                raise click.ClickException(str(exc)) from None
            # Closed (its connections, the queue's) when the command line ends, not when the process
            # does: a caller that lives on (click's test runner, a script calling `main`) keeps none.
            ctx.find_root().call_on_close(built.dispose)
            meta[RUNTIME] = built
    found: Runtime = meta[RUNTIME]
    return found


def owner(owner_id: str, as_json: bool = False) -> str:
    """OWNER_ID as given, once it is one: a blank one names no person, and one the service could
    never hold (over 200 characters, a control character, "/", a dot segment) is said to be not
    valid, before anything is looked up."""
    if not owner_id.strip():
        raise Refusal("invalid_where", as_json)
    if not is_valid_id(owner_id):
        raise Refusal("invalid_owner_id", as_json)
    return owner_id


def tenant_ref_id(found: Runtime, name_or_id: str | None, as_json: bool = False) -> str:
    if name_or_id is None:
        return ""
    tenant = found.tenants.find(name_or_id)
    if tenant is None:
        if as_json:
            raise Refusal("unknown_tenant", as_json)
        raise click.ClickException(f"no tenant named or numbered {name_or_id!r}")
    return tenant.id


def person_tenant(found: Runtime, owner_id: str, tenant_ref: str | None) -> str:
    """The tenant the person OWNER_ID is to be found in, for every command that hands a person's
    data over or erases it (`export`, `forget-matching`, `purge-owner`): --tenant's, or the only
    tenant there is (said on standard error, which keeps standard output for the answer). With
    several tenants and no --tenant, a one-line refusal saying how to choose, and never a guess:
    owner ids are per tenant, and the one tenant keeping anything under an owner id may keep
    someone else's namesake (the person asking may have nothing kept yet)."""
    if tenant_ref is not None:
        return tenant_ref_id(found, tenant_ref)
    every = found.tenants.all()
    if len(every) == 1:
        click.echo(f"{owner_id}: in tenant {every[0].name}, the only tenant", err=True)
        return every[0].id
    holding = found.support.tenants_of(owner_id)
    if len(holding) == 1:
        raise click.ClickException(f"{owner_id!r} is kept only in tenant {holding[0].name} (of {len(every)} tenants; "
                                   f"owner ids are per tenant): add --tenant {shlex.quote(holding[0].name)} if that "
                                   "is the person")
    if not holding:
        raise click.ClickException(f"no tenant keeps anything about {owner_id!r}: check the owner id, or say which "
                                   "tenant with --tenant")
    raise click.ClickException(f"{owner_id!r} is kept in {len(holding)} tenants "
                               f"({', '.join(t.name for t in holding)}): say which with --tenant")


def upgrade_schema(found: Runtime) -> None:
    """Migrate to head, with the secret of the keys the runtime checked (0018 digests refs with it);
    a PostgreSQL whose pgvector is missing or too old is a clear error."""
    try:
        upgrade(found.engine, words_secret=found.store.words_secret)
    except (VectorExtensionError, KeysNeeded) as exc:
        raise click.ClickException(str(exc)) from None
