"""Where an erased word could still hide: any row of any table, the SQLite files' bytes, and the
objects a worker keeps in memory. Each scan answers findings, one short line per leak
("memories_fts_data holds 'zqvarn07'"), so a failing test names the place and the word at once.

Every word the suites seed starts with two letters no other word of its world starts with
(`zq`, `qj`, `xv`...). SQLite's FTS5 stores a term without the prefix it shares with the term
before it in a segment; such a word shares at most its first letter with any neighbour, so the
word less its first letter is always written out whole. The scans look for that tail (as well as
the whole word): a hit is the word, however the index stored it.
"""

from __future__ import annotations

import re
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine


def needles(word: str) -> tuple[bytes, bytes]:
    """The word and its tail, as lower-case UTF-8 (the same bytes as ASCII for these words)."""
    raw = word.lower().encode("utf-8")
    return raw, raw[1:]


def holds(data: bytes, word: str) -> bool:
    return any(n in data for n in needles(word))


def table_names(engine: Engine) -> list[str]:
    """Every table: SQLAlchemy's list, and on SQLite every table `sqlite_master` knows, so the
    full-text index itself (`memories_fts`) and its shadow tables (`memories_fts_data`, `_idx`,
    `_docsize`, `_config`) are read too."""
    names = set(inspect(engine).get_table_names())
    if engine.dialect.name == "sqlite":
        with engine.connect() as conn:
            names |= set(conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'")).scalars())
    return sorted(names)


FERNET_TOKEN = re.compile(r"gAAAAA[A-Za-z0-9_\-]+=*")
Decrypt = Callable[[str], str]


def _value_bytes(value: Any, decrypt: Decrypt | None = None) -> list[bytes]:
    """What a column value may reveal: str as UTF-8; bytes raw and decoded (invalid bytes dropped,
    which could join a word split by them); anything else by its text form (pgvector arrays...).
    With `decrypt` (the store's key), every encrypted token in a text is read too: what an
    encrypting store keeps is still a person's words to whoever holds the key."""
    if value is None:
        return []
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return [raw.lower(), raw.decode("utf-8", errors="ignore").encode("utf-8").lower()]
    found = [str(value).lower().encode("utf-8")]
    if decrypt is not None and isinstance(value, str):
        for token in FERNET_TOKEN.findall(value):
            try:
                found.append(decrypt(token).lower().encode("utf-8"))
            except Exception:  # noqa: BLE001, S112 - not a token of this key: nothing more to read
                continue
    return found


def rows(engine: Engine) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """(table, row) for every row of every table, read with plain SQL."""
    quote = engine.dialect.identifier_preparer.quote
    with engine.connect() as conn:
        for name in table_names(engine):
            for row in conn.execute(text(f"SELECT * FROM {quote(name)}")):
                yield name, tuple(row)


def words_in_tables(engine: Engine, words: Iterable[str], skip: Iterable[str] = (),
                    decrypt: Decrypt | None = None) -> list[str]:
    """'<table> holds <word>' for every table (but `skip`) with a row holding a word (in the clear,
    or encrypted with the key `decrypt` holds)."""
    wanted, skipped = list(words), set(skip)
    found: dict[tuple[str, str], int] = {}
    for table, row in rows(engine):
        if table in skipped:
            continue
        blobs = [b for v in row for b in _value_bytes(v, decrypt)]
        for word in wanted:
            if any(holds(b, word) for b in blobs):
                found[(table, word)] = found.get((table, word), 0) + 1
    return [f"{table} holds {word!r} ({n} row{'s' * (n > 1)})" for (table, word), n in sorted(found.items())]


def rows_naming(engine: Engine, name: str, tables: Iterable[str] | None = None, skip: Iterable[str] = ()) -> list[str]:
    """'<table>: <row>' for every row (of `tables`, or of every table but `skip`) naming `name`."""
    needle, only, skipped = name.lower().encode("utf-8"), set(tables) if tables is not None else None, set(skip)
    out = []
    for table, row in rows(engine):
        if table in skipped or (only is not None and table not in only):
            continue
        if any(needle in b for v in row for b in _value_bytes(v)):
            shown = ", ".join(repr(v)[:40] for v in row[:5])
            out.append(f"{table} row names {name!r}: ({shown}...)")
    return out


def words_in_files(database: Path, words: Iterable[str], when: str) -> list[str]:
    """'<file> <when> holds <word>' for the SQLite file and every file beside it that bears its
    name (its -wal and -shm, the job queue's and the rate-limit counters' files and theirs), byte
    by byte."""
    out = []
    for path in sorted(database.parent.glob(f"{database.name}*")):
        if not path.is_file():
            continue
        data = path.read_bytes().lower()
        out.extend(f"{path.name} ({when}) holds {word!r}" for word in words if holds(data, word))
    return out


def postgres_files(engine: Engine, since: float = 0.0) -> list[Path]:
    """After a CHECKPOINT has written every dirty page out: the files of this database in its
    server's data directory and the cluster's shared catalogs, and of the write-ahead log and the
    server log those written at `since` (a time.time()) or later (the server is shared by the whole
    test session). Needs a local server (the tests' own) and a superuser."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("CHECKPOINT"))
        data = Path(conn.execute(text("SHOW data_directory")).scalar_one())
        oid = conn.execute(text("SELECT oid FROM pg_database WHERE datname = current_database()")).scalar_one()
    assert (data / "PG_VERSION").exists(), f"the server's data directory {data} is not readable here"

    def files(folder: Path) -> list[Path]:
        return [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []

    logs = [*files(data / "pg_wal"), *files(data / "log"), *data.glob("*.log")]
    return [*files(data / "base" / str(oid)), *files(data / "global"), *(p for p in logs if p.stat().st_mtime >= since)]


def words_in_postgres_files(engine: Engine, words: Iterable[str], when: str, since: float = 0.0) -> list[str]:
    """'<file> <when> holds <word>' for every file `postgres_files` names, byte by byte (in the
    clear: an encrypted word is unreadable there without the key, which the database never has).

    Each file is lower-cased and searched case-sensitively for the (lower-case) needles: the same
    matches as an re.IGNORECASE search of the file (both fold ASCII only), about ten times faster
    (a world's scan reads some 40 MB: two WAL segments and the database's files)."""
    wanted = list(words)
    if not wanted:
        return []
    pattern = re.compile(b"|".join(re.escape(n) for w in wanted for n in needles(w)))
    out = []
    for path in postgres_files(engine, since):
        try:
            content = path.read_bytes().lower()
        except FileNotFoundError:  # a WAL segment recycled meanwhile
            continue
        hits = {m.group(0) for m in pattern.finditer(content)}
        out += [f"{path.parent.name}/{path.name} ({when}) holds {w!r}" for w in wanted if any(n in hits for n in needles(w))]
    return out


_ATOMS = (int, float, bool, complex, Decimal, datetime, date, type(None))
_OPAQUE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
           type(threading.Lock()), type(threading.RLock()), threading.Thread)


def strings_in(root: Any, limit: int = 2_000_000) -> Iterator[str]:
    """Every string reachable from `root` through containers and object attributes (dicts, lists,
    tuples, sets, numpy object arrays, `__dict__` and `__slots__`), each object visited once.
    Written against no particular class, so it still finds what a reshaped cache would keep."""
    seen: set[int] = set()
    stack = [root]
    while stack and len(seen) < limit:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _ATOMS + _OPAQUE):
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            yield obj
        elif isinstance(obj, (bytes, bytearray, memoryview)):
            yield bytes(obj).decode("utf-8", errors="ignore")
        elif isinstance(obj, np.ndarray):
            if obj.dtype == object:
                stack.extend(obj.ravel().tolist())
        elif isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)) or hasattr(obj, "__iter__") and hasattr(obj, "maxlen"):
            stack.extend(obj)
        else:
            stack.extend(vars(obj).values() if hasattr(obj, "__dict__") else ())
            for klass in type(obj).__mro__:
                for slot in getattr(klass, "__slots__", ()):
                    if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                        stack.append(getattr(obj, slot))
