"""What every command shares: the runtime, tenant references, the schema, and the one answer to
the services' errors: a sentence and a non-zero exit (`Refusal`), or with `--json` the code and
the sentence as JSON on standard output."""

from __future__ import annotations

import functools
import json
from typing import Any

import click
from flask import current_app

from portal.adapters.sql.migrate import upgrade
from portal.adapters.sql.ref_keys import KeysNeeded
from portal.adapters.sql.vector_extension import VectorExtensionError
from portal.bootstrap import Runtime, build_runtime
from portal.config import ConfigError, load_config
from portal.domain.catalog import CATALOGS, DEFAULT_LANGUAGE, message
from portal.domain.errors import MemoryServiceError

_KNOWN = frozenset(CATALOGS[DEFAULT_LANGUAGE])


def sentence(code: str) -> str:
    """A refusal code in words (English, the command line's language); the code itself when the
    catalog has no text of its own for it."""
    return (message(f"refused.{code}", DEFAULT_LANGUAGE) or code) if f"refused.{code}" in _KNOWN else code


class Refusal(click.ClickException):
    """A refused command: "Error: <sentence>" on standard error and exit 1; with `as_json`, the
    code and the sentence as one JSON object on standard output instead (scripts read the code)."""

    def __init__(self, code: str, as_json: bool = False) -> None:
        super().__init__(sentence(code) or code)
        self.code, self.as_json = code, as_json

    def show(self, file: Any = None) -> None:
        if self.as_json:
            click.echo(json.dumps({"ok": False, "code": self.code, "message": self.message}))
        else:
            super().show(file)


def refusals_as_errors(command: click.Command) -> click.Command:
    """The command (each command of a group) answers a service's refusal as a one-line error
    naming its code and a non-zero exit, never a traceback: under the console script and under
    `flask --app portal` alike."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            refusals_as_errors(sub)
        return command
    callback = command.callback
    if callback is None or getattr(callback, "answers_refusals", False):
        return command

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except MemoryServiceError as exc:
            raise Refusal(exc.code, bool(kwargs.get("as_json"))) from None

    run.answers_refusals = True  # type: ignore[attr-defined]
    command.callback = run
    return command


def current_runtime(check_keys: bool = True) -> Runtime:
    """The app's runtime under `flask`, or one built from the environment for the console script
    (`check_keys=False`: without the encryption keys check, for `rotate-keys` alone)."""
    # In the invocation's `meta` (shared by every context of one command line), not in `obj`:
    # under flask, `obj` is flask's own ScriptInfo.
    ctx = click.get_current_context()
    meta = ctx.meta
    if "memory_runtime" not in meta:
        try:
            meta["memory_runtime"] = current_app.extensions["memory_runtime"]
        except RuntimeError:  # no app context: the console script
            try:
                built = build_runtime(load_config(), check_keys=check_keys)
            except ConfigError as exc:
                raise click.ClickException(str(exc)) from None
            # Closed (its connections, the queue's) when the command line ends, not when the process
            # does: a caller that lives on (click's test runner, a script calling `main`) keeps none.
            ctx.find_root().call_on_close(built.dispose)
            meta["memory_runtime"] = built
    found: Runtime = meta["memory_runtime"]
    return found


def tenant_ref_id(found: Runtime, name_or_id: str | None, as_json: bool = False) -> str:
    if name_or_id is None:
        return ""
    tenant = found.tenants.find(name_or_id)
    if tenant is None:
        if as_json:
            raise Refusal("unknown_tenant", as_json)
        raise click.ClickException(f"no tenant named or numbered {name_or_id!r}")
    return tenant.id


def upgrade_schema(found: Runtime) -> None:
    """Migrate to head, with the secret of the keys the runtime checked (0018 digests refs with it);
    a PostgreSQL whose pgvector is missing or too old is a clear error."""
    try:
        upgrade(found.engine, words_secret=found.store.words_secret)
    except (VectorExtensionError, KeysNeeded) as exc:
        raise click.ClickException(str(exc)) from None
