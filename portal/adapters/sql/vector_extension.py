"""pgvector: the version the code needs, and a probe that its build runs on this CPU.

The store uses `<=>` (cosine distance), `sum(vector)` and `l2_normalize` (pgvector 0.7.0), so
`db upgrade` refuses a server whose pgvector is older, naming the version it found. The probe is
for throwaway servers (tests, benchmarks): a pgvector compiled for a newer instruction set than
the machine has (AVX-512 on an AVX2-only CPU) answers 3-dimension vectors and kills its backend
with SIGILL on the first real one, so the probe runs one 384-dimension distance and normalisation
right after the server starts and turns a crash into one message naming the build and the CPU.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

# l2_normalize came in 0.7.0; `<=>`, `<->`, sum(vector) and vector_send are older.
MINIMUM_VERSION = (0, 7, 0)
PROBE_DIMENSIONS = 384


class VectorExtensionError(RuntimeError):
    """pgvector is missing, too old, or crashes on this machine; the message says which."""


@dataclass(frozen=True)
class VectorBuild:
    """What a probe found: the server, pgvector's version, and the package the server came from."""

    server: str
    vector_version: str
    package: str


def parse_version(found: str) -> tuple[int, ...]:
    """'0.8.1' → (0, 8, 1); a suffix such as '0.8.0-dev' keeps its numbers only."""
    numbers = re.findall(r"\d+", found.split("-")[0])
    if not numbers:
        raise VectorExtensionError(f"pgvector reports an unreadable version {found!r}")
    return tuple(int(n) for n in numbers)


def version_text(version: tuple[int, ...]) -> str:
    return ".".join(str(n) for n in version)


def check_version(found: str) -> None:
    """Raise when `found` is older than the version the code needs."""
    if parse_version(found) < MINIMUM_VERSION:
        raise VectorExtensionError(
            f"pgvector {found} is too old: the portal needs {version_text(MINIMUM_VERSION)} or newer "
            "(it uses l2_normalize). Update the extension on the server, then run "
            "ALTER EXTENSION vector UPDATE in the portal's database, and run `db upgrade` again."
        )


def require_supported(conn: Connection) -> str:
    """The pgvector version this database has (installed) or will get (available), if new enough.

    An installed extension is what the queries run against, even when the server offers a newer
    one; an absent extension will be created by the first migration at the server's default.
    """
    installed = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
    found = installed or conn.execute(
        text("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
    ).scalar()
    if not found:
        raise VectorExtensionError(
            "the PostgreSQL server has no pgvector extension: install pgvector "
            f"{version_text(MINIMUM_VERSION)} or newer on it (https://github.com/pgvector/pgvector)"
        )
    check_version(str(found))
    return str(found)


def server_package() -> str:
    """The Python distribution that provides the `pgserver` module, with its version (or 'none')."""
    providers = metadata.packages_distributions().get("pgserver", [])
    if not providers:
        return "none"
    return ", ".join(f"{name} {metadata.version(name)}" for name in sorted(set(providers)))


def describe_cpu() -> str:
    """The CPU model and the vector instruction sets a pgvector build may have been compiled for."""
    model, flags = platform.processor() or platform.machine(), set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    has = [name for name in ("avx2", "avx512f") if name in flags]
    lacks = [name for name in ("avx2", "avx512f") if name not in flags]
    parts = [model]
    if flags:
        parts.append(f"has {', '.join(has) or 'neither avx2 nor avx512f'}")
        if lacks:
            parts.append(f"lacks {', '.join(lacks)}")
    return "; ".join(parts)


def probe(engine: Engine) -> VectorBuild:
    """Run one 384-dimension `<=>`, `<->` and `l2_normalize` on the server; raise if it dies.

    Everything happens in a transaction that is rolled back, so the probed database is left as it
    was (the extension is created only for the probe when it was not there).
    """
    server = vector_version = "unknown"
    vector = "[" + ",".join(f"{(i % 7 + 1) / 8:.3f}" for i in range(PROBE_DIMENSIONS)) + "]"
    try:
        with engine.connect() as conn:
            server = str(conn.execute(text("SHOW server_version")).scalar())
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            vector_version = str(conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar())
            row = conn.execute(
                text("SELECT CAST(:v AS vector) <=> CAST(:v AS vector), CAST(:v AS vector) <-> CAST(:v AS vector), "
                     "vector_dims(l2_normalize(CAST(:v AS vector)))"),
                {"v": vector},
            ).one()
            conn.rollback()
    except DBAPIError as exc:
        raise VectorExtensionError(
            f"the test PostgreSQL died on a {PROBE_DIMENSIONS}-dimension vector operation "
            f"({type(exc.orig).__name__}: the server closed the connection). pgvector {vector_version} on "
            f"PostgreSQL {server}, from the Python package {server_package()}, does not run on this CPU "
            f"({describe_cpu()}): it was most likely compiled for instructions this CPU lacks. "
            "Install the pinned test extra again (scripts/bootstrap.sh local,postgres,test) or set "
            "MEMORY_TEST_DATABASE_URL to a server whose pgvector runs here."
        ) from None
    if abs(float(row[0])) > 1e-6 or abs(float(row[1])) > 1e-4 or int(row[2]) != PROBE_DIMENSIONS:
        raise VectorExtensionError(
            f"pgvector {vector_version} on PostgreSQL {server} ({server_package()}) answers wrong results "
            f"on this CPU ({describe_cpu()}): distance {row[0]}, {row[1]}, normalised length {row[2]}"
        )
    return VectorBuild(server=server, vector_version=vector_version, package=server_package())
