"""The run-wide log guard (tests/log_guard.py) catches what it is there for: a database error whose
traceback prints the statement's parameters, on a real database."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from portal.adapters.sql.engine import make_engine

from ..log_guard import LogGuard

SECRET = "Secret pgnulword diagnosis of the knee"


def test_the_guard_finds_words_a_test_wrote_in_a_log_line() -> None:
    guard = LogGuard()
    guard.saw("INSERT INTO memories (text) VALUES (:text)", {"text": SECRET})
    guard.emit(logging.LogRecord("portal.api", logging.ERROR, __file__, 1, f"params: {{'text': '{SECRET}'}}", None, None))
    guard.emit(logging.LogRecord("portal.api", logging.INFO, __file__, 1, "memory.remember id=abc", None, None))
    assert len(guard.leaks()) == 1


def test_a_failed_write_logs_no_parameters(sqlite_engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    guard = LogGuard()
    with pytest.raises(DBAPIError) as failed, sqlite_engine.begin() as conn:
        guard.saw("INSERT INTO nowhere (text) VALUES (:text)", {"text": SECRET})
        conn.execute(text("INSERT INTO nowhere (text) VALUES (:text)"), {"text": SECRET})
    logging.getLogger("portal.api").exception("api.error", exc_info=failed.value)
    assert SECRET not in str(failed.value)  # hide_parameters: the error's text carries none
    for record in caplog.records:
        guard.emit(record)
    assert guard.leaks() == []
    # The same engine without hide_parameters would have leaked it: the guard would have seen.
    bare = make_engine(sqlite_engine.url, hide_parameters=False)
    with pytest.raises(DBAPIError) as leaked, bare.begin() as conn:
        conn.execute(text("INSERT INTO nowhere (text) VALUES (:text)"), {"text": SECRET})
    bare.dispose()
    guard.emit(logging.LogRecord("portal.api", logging.ERROR, __file__, 1, str(leaked.value), None, None))
    assert guard.leaks() != []
