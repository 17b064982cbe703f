"""A guard over the whole test run: no log line may carry the words the tests wrote.

Every string a test sends to a database in an INSERT or UPDATE (a memory's text, a revision, a
name: anything of twelve characters or more with a space in it) is remembered, and every log
record of the run is kept (the app's own loggers at DEBUG, everything else at its level, tracebacks
included). At the end of the session each quoted string and each whole line of the logs is checked
against those words: one found fails the run (SQLAlchemy's parameters in a traceback, a request
body echoed in an error).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

QUOTED = re.compile(r"'([^'\\]{12,})'|\"([^\"\\]{12,})\"")
WRITES = re.compile(r"^\s*(INSERT|UPDATE)\b", re.I)


class LogGuard(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.written: set[str] = set()
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is nobody's words
            pass

    def saw(self, statement: str, parameters: Any) -> None:
        if not WRITES.match(statement):
            return
        for params in parameters if isinstance(parameters, list) else [parameters]:
            values = params.values() if isinstance(params, dict) else params if isinstance(params, (tuple, list)) else ()
            for value in values:
                if isinstance(value, str) and len(value) >= 12 and " " in value and len(self.written) < 500_000:
                    self.written.add(value)

    def leaks(self) -> list[str]:
        found = []
        for line in self.lines:
            quoted = {a or b for a, b in QUOTED.findall(line)}
            hit = next((w for w in quoted if w in self.written), None)
            if hit is None and line in self.written:
                hit = line
            if hit is not None:
                found.append(line[:300])
        return found


GUARD = LogGuard()


def install() -> None:
    logging.getLogger().addHandler(GUARD)
    logging.getLogger("portal").setLevel(logging.DEBUG)

    @event.listens_for(Engine, "before_cursor_execute")
    def _seen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        GUARD.saw(statement, parameters)
