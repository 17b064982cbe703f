"""Running and looking after the service: serve, reindex, erase or export a person, retention
(`prune`) and key rotation (`rotate-keys`). docs/operations.md says when to run each. They print
ids and counts, never a person's words (except `export`, whose whole point is to hand them over)."""

from __future__ import annotations

import json
import os
import re
import sys
from datetime import timedelta
from typing import Any

import click
from tqdm import tqdm

from portal.adapters.cipher import FernetCipher, generate_key
from portal.adapters.sql.rotation import RotationError, rows_to_visit
from portal.adapters.sql.rotation import rotate_keys as rotate
from portal.cli.common import current_runtime, owner, person_tenant, tenant_ref_id
from portal.config import ConfigError, load_config
from portal.domain.audit import AuditNote
from portal.domain.imports import MAX_BYTES, parse
from portal.domain.types import Place
from portal.serve import control_socket_answers, port_in_use, run

DURATION = re.compile(r"(?P<amount>[1-9][0-9]{0,5})(?P<unit>[dhm])")
UNITS = {"d": "days", "h": "hours", "m": "minutes"}
LONGEST = timedelta(days=36_500)


class Duration(click.ParamType):
    """A period like 90d, 12h or 30m: a whole positive number and one unit (days, hours, minutes)."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> timedelta:
        if isinstance(value, timedelta):
            return value
        match = DURATION.fullmatch(str(value).strip())
        if match is None:
            self.fail(f"{value!r} is not a period: use a whole number and d, h or m, like 90d, 12h or 30m", param, ctx)
        period = timedelta(**{UNITS[match["unit"]]: int(match["amount"])})
        if period > LONGEST:
            self.fail(f"{value!r} is longer than 100 years", param, ctx)
        return period


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, type=int, show_default=True)
@click.option("--workers", type=int, default=None, help="Worker processes (default: WEB_CONCURRENCY or 2).")
@click.option("--threads", type=click.IntRange(1, 64), default=None,
              help="Request threads per worker (default: GUNICORN_THREADS or 8): a request waiting on the "
                   "model or the database holds a thread, not the worker.")
@click.option("--timeout", type=int, default=60, show_default=True)
@click.option("--mcp-streams", type=click.IntRange(0, 256), default=8, show_default=True,
              help="MCP SSE streams (OpenMemory's /mcp/<client>/sse/<user>) a worker holds at once, each on a "
                   "thread of its own beside --threads; more are refused 503 too_many_streams.")
def serve(host: str, port: int, workers: int | None, threads: int | None, timeout: int, mcp_streams: int) -> None:
    """Run the app on gunicorn (a production WSGI server), not Flask's debug server."""
    try:
        config = load_config()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if port_in_use(host, port):  # said before anything loads, in one line (portal.serve.port_in_use)
        raise click.ClickException(
            f"port {port} on {host} is in use already (another server?): stop it, or serve on another --port")
    control = config.instance_path / f"gunicorn.{port}.ctl"  # one per server: two may serve an instance
    if control_socket_answers(control):  # on another host's same port: gunicorn would take its socket over
        raise click.ClickException(f"another server of this instance serves port {port} already (its control socket "
                                   f"{control} answers): stop it, or serve on another --port")
    count = workers or int(os.environ.get("WEB_CONCURRENCY", "2"))
    run(host, port, count, timeout, threads or int(os.environ.get("GUNICORN_THREADS", "8")), control_socket=control,
        mcp_streams=mcp_streams)


@click.command()
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True,
              help="Jobs run at once (threads: a job mostly waits on the model).")
def worker(workers: int) -> None:
    """Run background consolidations (POST /consolidate with "wait": false) until stopped (SIGINT
    or SIGTERM: the running jobs finish first, for at most 20 s). Jobs left queued or running by a
    worker that died are taken up again, at start and every minute."""
    from portal.adapters.queue import Worker  # why: huey's consumer, for this command only

    runtime = current_runtime()
    taken_up = runtime.queue.take_up()  # and again every minute
    click.echo(json.dumps({"workers": workers, "taken_up": taken_up}), err=True)
    Worker(runtime.queue, workers=workers).run_forever()


@click.command()
@click.option("--limit", type=int, default=None, help="Embed at most this many memories.")
def reindex(limit: int | None) -> None:
    """Give a vector to memories without one (or of another model); resumable."""
    runtime = current_runtime()
    if runtime.service.embedder is None:
        raise click.ClickException("no embedder configured (MEMORY_EMBEDDER=none)")
    with tqdm(unit="memory", file=sys.stderr, disable=None) as bar:
        done = runtime.service.reindex(limit=limit, progress=bar.update)
    click.echo(f"embedded {done} memories")


@click.command("purge-owner")
@click.argument("owner_id")
@click.option("--tenant", "tenant_ref", default=None,
              help="Tenant name or id (needed when there is more than one tenant: owner ids are per tenant).")
@click.option("--every-tenant", is_flag=True,
              help="Erase OWNER_ID in every tenant instead: right only when the host's owner ids are unique "
                   "across tenants, since another tenant's OWNER_ID is someone else.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def purge_owner(owner_id: str, tenant_ref: str | None, every_tenant: bool, yes: bool) -> None:
    """Erase the person OWNER_ID in one tenant (--tenant; the only tenant there is needs none), or
    the owner id in every tenant (--every-tenant), as the support console's erasure does: everything
    kept about them and their account go, and their open erasure requests there are completed, in one
    transaction audited as the operator's. Prints the counts, as JSON."""
    owner(owner_id)
    if every_tenant and tenant_ref is not None:
        raise click.UsageError("give --tenant or --every-tenant, not both")
    runtime = current_runtime()
    tenants = None if every_tenant else [person_tenant(runtime, owner_id, tenant_ref)]
    if not yes:
        where = ("in EVERY tenant (owner ids are per tenant)" if tenants is None
                 else f"in tenant {tenant_ref}" if tenant_ref is not None else "in the only tenant")
        click.confirm(f"Erase everything kept about {owner_id} {where}, their account included?", abort=True)
    counts = runtime.support.erase_owner(owner_id, tenants)
    runtime.store.settle(60)  # the cleaning up after the erasure, before the process ends
    click.echo(json.dumps(counts))


@click.command("forget-matching")
@click.argument("owner_id")
@click.argument("query")
@click.option("--tenant", "tenant_ref", default=None,
              help="Tenant name or id (needed when there is more than one tenant: owner ids are per tenant).")
@click.option("--yes", is_flag=True, help="Forget what the preview lists (without it: the preview alone).")
def forget_matching(owner_id: str, query: str, tenant_ref: str | None, yes: bool) -> None:
    """Forget everything about QUERY kept for OWNER_ID in one tenant: the memories sharing a word
    with it, as close by meaning as the relevance floor, or naming a person it names, archived ones
    too (at most 200 a run). Without --yes, prints what matches (ids and how many, never a word);
    with --yes, forgets exactly what that preview listed, as `forget` does, with one audit entry."""
    runtime = current_runtime()
    place = Place(owner(owner_id), person_tenant(runtime, owner_id, tenant_ref))
    found = runtime.service.preview_forget_matching(place, query)
    ids = [m.id for m in found.items]
    if not yes:
        click.echo(json.dumps({"matched": len(ids), "more": found.more, "ids": ids, "dry_run": True}))
        return
    done = runtime.service.forget_matching(place, found.token, ids,
                                           audit=AuditNote(None, "operator", "person.forgot_matching"))
    runtime.store.settle(60)  # the cleaning up after the erasure, before the process ends
    click.echo(json.dumps({**done.to_json(), "more": found.more}))


@click.command()
@click.argument("owner_id")
@click.option("--tenant", "tenant_ref", default=None,
              help="Tenant name or id (needed when there is more than one tenant: owner ids are per tenant).")
def export(owner_id: str, tenant_ref: str | None) -> None:
    """Print everything kept about OWNER_ID in one tenant, their account included, as the export
    document (JSON; what the support console hands over for an access request, and the format
    `import` reads back, docs/operations.md "Export format"). Audited as the operator's."""
    runtime = current_runtime()
    place = Place(owner(owner_id), person_tenant(runtime, owner_id, tenant_ref))
    click.echo(json.dumps(runtime.support.export_owner(place), ensure_ascii=False, indent=2))


@click.command("import")
@click.argument("given", nargs=-1, required=True, metavar="OWNER_ID FILE")
@click.option("--owner", "owner_option", default=None, hidden=True,
              help="OWNER_ID, the form of before: `import FILE --owner OWNER_ID`.")
@click.option("--tenant", "tenant_ref", required=True, help="Tenant name or id.")
@click.option("--dry-run", is_flag=True, help="Say what would be added; keep nothing.")
@click.option("--json", "as_json", is_flag=True, help="Refusals as JSON with their code.")
def import_file(given: tuple[str, ...], owner_option: str | None, tenant_ref: str, dry_run: bool, as_json: bool) -> None:
    """Add the memories FILE holds to OWNER_ID's (the person, named as `export` and `purge-owner`
    name them; the file never chooses): our own export (JSON), mem0's get_all/export JSON, or plain
    text with one memory per line. The same file twice adds nothing. Prints the counts, as JSON:
    added (with --dry-run: would be added), duplicates (already kept), refused (by code),
    earlier_refused (earlier wordings of the added memories left out, by code)."""
    if owner_option is not None and len(given) != 1:
        raise click.UsageError("name the person either OWNER_ID (before FILE) or --owner, not both")
    if owner_option is None and len(given) != 2:
        raise click.UsageError("give OWNER_ID and FILE: memory-portal import OWNER_ID FILE --tenant T")
    owner_id, path = (owner_option, given[0]) if owner_option is not None else given
    owner(owner_id, as_json)
    with click.open_file(path, "rb") as file:
        raw = file.read(MAX_BYTES + 1)
    runtime = current_runtime()
    place = Place(owner_id, tenant_ref_id(runtime, tenant_ref, as_json))
    parsed = parse(raw)
    done = runtime.service.import_parsed(place, parsed, dry_run=dry_run,
                                         audit=None if dry_run else AuditNote(None, "operator", "person.imported"))
    click.echo(json.dumps({"format": done.format, "added": done.new, "duplicates": done.duplicates,
                           "refused": done.refused, "earlier_refused": done.earlier_refused, "dry_run": dry_run}))


@click.command()
@click.option("--history-older-than", "history", type=Duration(), default=None,
              help="Delete earlier wordings replaced longer ago than this (e.g. 90d).")
@click.option("--receipts-older-than", "receipts", type=Duration(), default=None,
              help="Delete completed idempotency receipts older than this (e.g. 30d).")
@click.option("--archived-older-than", "archived", type=Duration(), default=None,
              help="Erase archived memories neither written nor used for this long (e.g. 180d).")
@click.option("--app-uses-older-than", "app_uses", type=Duration(), default=None,
              help="Delete connected apps' uses last counted longer ago than this (default: "
                   "MEMORY_APP_USES_DAYS, 180 days; 0 keeps them).")
@click.option("--jobs-older-than", "jobs", type=Duration(), default=None,
              help="Delete background consolidations over for longer than this (e.g. 30d; they hold counts only).")
def prune(history: timedelta | None, receipts: timedelta | None, archived: timedelta | None,
          app_uses: timedelta | None, jobs: timedelta | None) -> None:
    """Apply retention periods in every tenant; prints what was deleted, as JSON.

    Whatever the periods, it first erases what is kept only for a while and whose time is over:
    earlier wordings of a person's own edits whose Undo is no longer offered, and job summaries
    their app never read (the background worker does this every minute too). A memory's current
    text is never touched; the last change of a recently changed memory can still be undone. Safe
    to run from cron (e.g. daily) and to run again.
    """

    runtime = current_runtime()
    if app_uses is None:
        app_uses = runtime.service.options.app_uses_retention
    with tqdm(unit="row", file=sys.stderr, disable=None) as bar:
        counts = runtime.service.prune(history, receipts, archived, progress=bar.update, app_uses_older_than=app_uses,
                                       jobs_older_than=jobs)
    runtime.store.settle(60)  # the cleaning up after what it erased, before the process ends
    click.echo(json.dumps(counts.to_json()))


@click.command("encryption-key")
def encryption_key() -> None:
    """Print a new key for MEMORY_ENCRYPTION_KEYS (required with PostgreSQL; a Fernet key).

    Keep it in a secret store, apart from the database and its backups: without it the text is
    unreadable. To roll keys, put a new one first and run `rotate-keys` (docs/operations.md)."""
    click.echo(generate_key())


@click.command("rotate-keys")
@click.option("--batch-size", type=click.IntRange(min=1), default=500, show_default=True,
              help="Rows per transaction.")
@click.option("--encrypt-plaintext", is_flag=True,
              help="Also encrypt text a database written without encryption holds in the clear (stop the app first).")
def rotate_keys(batch_size: int, encrypt_plaintext: bool) -> None:
    """Re-encrypt stored text with the first key of MEMORY_ENCRYPTION_KEYS.

    Every memory text, revision text, stored idempotent answer, and background job's transcript and
    summary that an older key wrote is re-encrypted, and duplicate keys are recomputed. Resumable:
    stop it and run it again. Drop the old key from MEMORY_ENCRYPTION_KEYS only after a run that
    finished. With --encrypt-plaintext, text stored in the clear (a database that ran without
    keys) is encrypted too; see docs/operations.md, "Text at rest on PostgreSQL".
    """
    store = current_runtime(check_keys=False).store  # the keys check refuses what this mends
    if not isinstance(store.cipher, FernetCipher):
        raise click.ClickException("MEMORY_ENCRYPTION_KEYS is not set: stored text is not encrypted, nothing to rotate")
    try:
        with tqdm(total=rows_to_visit(store), unit="row", file=sys.stderr, disable=None) as bar:
            counts = rotate(store, store.cipher, batch=batch_size, progress=bar.update,
                            encrypt_plaintext=encrypt_plaintext)
    except RotationError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(counts.to_json()))


COMMANDS = (worker, serve, reindex, purge_owner, forget_matching, export, import_file, prune, encryption_key, rotate_keys)
