"""`memory-portal mcp`: the memory as an MCP server, for assistants that speak the Model Context
Protocol (Claude Desktop and the like).

By default it serves one person over stdio, as the assistant's own child process: `--owner` (or
`MEMORY_OWNER_ID`) names the person, `MEMORY_API_KEY` holds the key, the rest of the configuration
comes from the environment as for `serve` (`MEMORY_DATABASE_URL`, ...). With `--http` it serves
streamable HTTP on `--host`/`--port`, one endpoint per person (`/mcp/people/<owner_id>`), and
OpenMemory's tools at OpenMemory's URLs (`/mcp/<client_name>/http/<user_id>`, and the SSE one,
`/mcp/<client_name>/sse/<user_id>`: `portal.mcp.openmemory`, `portal.mcp.sse`), each request with
its own `Authorization: Bearer <key>`.

`memory-portal serve` serves the same URLs on the portal's own port (portal.mcp.in_serve: the ASGI
app in each gunicorn worker, its SSE streams bounded by `--mcp-streams` on threads beside the
portal's). `mcp --http` is that app alone on uvicorn (an open stream costs a coroutine, the
service's synchronous calls a thread each), for a deployment that keeps the MCP URLs apart from the
portal's (compose's `mcp` service). Both share the database and the service layer, so the rules,
refusals and audit are the same; only the shell differs.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import anyio
import click
from sqlalchemy.engine import make_url

from portal.adapters.sql.migrate import current_revision, head_revision
from portal.bootstrap import Runtime
from portal.cli.common import current_runtime
from portal.config import ConfigError, load_config
from portal.domain.catalog import DEFAULT_LANGUAGE
from portal.domain.people import LANGUAGES
from portal.inputs import is_valid_id

log = logging.getLogger("portal.mcp")


@click.command("mcp")
@click.option("--owner", "owner_id", default=None,
              help="stdio: whose memory this process serves (default: MEMORY_OWNER_ID). Not with --http, "
                   "where the endpoint names the person: /mcp/people/<owner_id>.")
@click.option("--http", "over_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="--http: the address to listen on.")
@click.option("--port", default=8001, type=click.IntRange(1, 65535), show_default=True, help="--http: the port.")
@click.option("--language", type=click.Choice(LANGUAGES), default=DEFAULT_LANGUAGE, show_default=True,
              help="The language of refusal messages (over HTTP, a request's Accept-Language goes first).")
@click.option("--allowed-host", "allowed_hosts", multiple=True,
              help="--http on a non-loopback address: a Host name clients use (repeatable), for the DNS "
                   "rebinding check.")
def mcp_command(
    owner_id: str | None, over_http: bool, host: str, port: int, language: str, allowed_hosts: tuple[str, ...]
) -> None:
    """Serve the memory over MCP: stdio for one person (default), or streamable HTTP (--http)."""
    _quiet_logs()
    _a_database_to_serve()
    if over_http:
        if owner_id is not None:
            raise click.UsageError("--owner is for stdio: over HTTP the endpoint names the person, "
                                   "/mcp/people/<owner_id>")
        # why: the MCP SDK (0.7 s to import) only for this command, not for every other one
        from portal.mcp.http import run_http

        runtime = _migrated(current_runtime())
        try:
            _warm_up(runtime)
            run_http(runtime, host, port, language, allowed_hosts)
        finally:
            runtime.dispose()
        return
    owner_id = owner_id if owner_id is not None else os.environ.get("MEMORY_OWNER_ID")
    if not owner_id:
        raise click.UsageError("give --owner (or MEMORY_OWNER_ID): whose memory this process serves")
    if not is_valid_id(owner_id):
        raise click.UsageError("--owner is not a valid owner id")
    token = os.environ.get("MEMORY_API_KEY", "").strip()
    if not token:
        raise click.ClickException("MEMORY_API_KEY is not set: make a key with `memory-portal api-key create`")
    runtime = _migrated(current_runtime())
    try:
        key = runtime.api_keys.verify(token)
        if key is None:
            raise click.ClickException("MEMORY_API_KEY is unknown or revoked")
        log.info("mcp.stdio key=%s tenant=%s", key.id, key.tenant_id)
        _warm_up(runtime)
        from portal.mcp.stdio import serve_stdio  # why: as above, the SDK only for this command

        anyio.run(serve_stdio, runtime, token, owner_id, language)
    finally:
        runtime.dispose()


def _a_database_to_serve() -> None:
    """Refuse to start without the portal's database: an assistant starts this process in a folder
    of its own, where the embedded default (a SQLite file under ./instance) would be made empty."""
    if os.environ.get("MEMORY_DATABASE_URL", "").strip():
        return
    try:
        config = load_config()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    database = make_url(config.database_url).database
    if config.database_url.startswith("sqlite") and database and not Path(database).exists():
        raise click.ClickException(
            f"MEMORY_DATABASE_URL is not set and there is no portal database at {database}: set "
            "MEMORY_DATABASE_URL to the portal's database (the same value `serve` runs with)")


def _migrated(runtime: Runtime) -> Runtime:
    """The runtime, once its database is at the schema this code needs (a clear stop otherwise,
    rather than a failure at the assistant's first call)."""
    if current_revision(runtime.engine) != head_revision():
        runtime.dispose()
        raise click.ClickException("the database is not at the current schema: run `memory-portal db upgrade`")
    return runtime


def _warm_up(runtime: Runtime) -> None:
    """Load the embedding model before the first request, so that no call waits seconds for it."""
    embedder = runtime.service.embedder
    if embedder is not None:
        try:
            embedder.embed(["warm up"], "query")
        except Exception as exc:  # the embedder may be remote and down: recall falls back to words
            log.warning("embedder.warm_up_failed error=%s", type(exc).__name__)


def _quiet_logs() -> None:
    """Logs on standard error (standard output is the protocol under stdio): ours at INFO, which
    carry ids and codes; the SDK's at WARNING (its debug lines can echo what a client sent)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("portal").setLevel(logging.INFO)
    logging.getLogger("mcp").setLevel(logging.WARNING)
    logging.getLogger("uvicorn.error").setLevel(logging.INFO)


__all__ = ["mcp_command"]
