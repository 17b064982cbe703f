"""The one answer of every command to what goes wrong: one line on standard error and a non-zero
exit, or with `--json` the code and the line as one JSON object on standard output.

- a service's refusal (`MemoryServiceError`): its code in words (exit 1);
- a file that cannot be read or written (`OSError`): its path and the system's reason (exit 1);
- the database: not migrated, at another revision, or out of reach, with what to do (exit 1);
- anything else is a bug of ours: its type and the line of our code it came from, never its text
  (which may quote a person's words or a statement's values), and exit 70 (EX_SOFTWARE), so that a
  script tells it from a refusal. `MEMORY_CLI_TRACEBACK=1` lets it through as Python prints it, for
  whoever debugs it on a copy of the data.

Click's own errors (a bad option, a refusal a command raised as a `click.ClickException`, Ctrl-C)
are click's to print, as they always were.
"""

from __future__ import annotations

import functools
import json
import os
import traceback
from pathlib import Path
from typing import Any

import click
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import current_revision, head_revision, known_revision
from portal.config import ConfigError, load_config
from portal.domain.catalog import CATALOGS, DEFAULT_LANGUAGE, message
from portal.domain.errors import MemoryServiceError

_KNOWN = frozenset(CATALOGS[DEFAULT_LANGUAGE])
ROOT = Path(__file__).resolve().parents[2]  # the checkout: where "our code" is
RUNTIME = "memory_runtime"  # the key of the command line's runtime in click's `meta` (portal.cli.common)
UPGRADE = "run `memory-portal db upgrade`"
BUG = 70  # EX_SOFTWARE


def sentence(code: str) -> str:
    """A refusal code in words (English, the command line's language); the code itself when the
    catalog has no text of its own for it."""
    return (message(f"refused.{code}", DEFAULT_LANGUAGE) or code) if f"refused.{code}" in _KNOWN else code


class Refusal(click.ClickException):
    """A refused command: "Error: <sentence>" on standard error and exit 1 (or `exit_code`); with
    `as_json`, the code and the sentence as one JSON object on standard output instead (scripts
    read the code). The sentence is the code's, unless `said` gives one."""

    def __init__(self, code: str, as_json: bool = False, said: str | None = None, exit_code: int = 1) -> None:
        super().__init__(said or sentence(code) or code)
        self.code, self.as_json = code, as_json
        self.exit_code = exit_code  # type: ignore[misc]  # click reads it from the instance too

    def show(self, file: Any = None) -> None:
        if self.as_json:
            click.echo(json.dumps({"ok": False, "code": self.code, "message": self.message}))
        else:
            super().show(file)


def errors_as_one_line(command: click.Command) -> click.Command:
    """The command (each command of a group) answers every error as one line (see the module's
    docstring): under the console script and under `flask --app portal` alike."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            errors_as_one_line(sub)
        return command
    callback = command.callback
    if callback is None or getattr(callback, "answers_errors", False):
        return command

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            return callback(*args, **kwargs)
        except (click.ClickException, click.Abort, click.exceptions.Exit):
            raise
        except MemoryServiceError as exc:
            raise Refusal(exc.code, as_json) from None
        except OSError as exc:
            said = f"{exc.filename}: {exc.strerror}" if exc.filename else (exc.strerror or type(exc).__name__)
            raise Refusal("file_error", as_json, said) from None
        except (DBAPIError, PoolTimeout) as exc:
            raise _database(as_json) or _bug(exc, as_json) from None
        except Exception as exc:
            if os.environ.get("MEMORY_CLI_TRACEBACK", "").strip() in ("1", "yes", "true"):
                raise
            raise _bug(exc, as_json) from None

    run.answers_errors = True  # type: ignore[attr-defined]
    command.callback = run
    return command


def _database(as_json: bool) -> Refusal | None:
    """What is wrong with the database, when it is not a bug: not migrated, at another revision than
    this code's, or out of reach (the driver's first line, which names the host, never the password)."""
    engine, made = _engine()
    if engine is None:
        return None
    try:
        found, head = current_revision(engine), head_revision()
    except (DBAPIError, PoolTimeout) as exc:
        reason = str(getattr(exc, "orig", None) or type(exc).__name__).strip().splitlines()
        return Refusal("database_unavailable", as_json, f"cannot reach the database: {reason[0] if reason else ''}")
    finally:
        if made:
            engine.dispose()
    if found is None:
        return Refusal("database_not_migrated", as_json, f"the database has no schema yet: {UPGRADE}")
    if found == head:
        return None
    if not known_revision(found):
        return Refusal("database_newer", as_json, f"the database is at revision {found}, newer than this code's "
                       f"{head}: run the release that migrated it")
    return Refusal("database_not_migrated", as_json,
                   f"the database is at revision {found} and this code needs {head}: {UPGRADE}")


def _engine() -> tuple[Engine | None, bool]:
    """The command's engine (its runtime's, or flask's app's), else one made from the configuration
    (and whether it was made here, to be disposed of)."""
    runtime = click.get_current_context().meta.get(RUNTIME)
    if runtime is not None:
        return runtime.engine, False
    try:
        return make_engine(load_config().database_url), True
    except (ConfigError, OSError, ValueError):
        return None, False


def _bug(exc: BaseException, as_json: bool) -> Refusal:
    """A bug: what and where, never the exception's text."""
    command = click.get_current_context().command_path
    return Refusal("unexpected", as_json, f"unexpected {type(exc).__name__} at {_where(exc)} in `{command}`: a bug, "
                   "not your input; report this line (MEMORY_CLI_TRACEBACK=1 prints the whole traceback, which may "
                   "quote stored words)", exit_code=BUG)


def _where(exc: BaseException) -> str:
    """The innermost line of our own code the exception went through (else the innermost line)."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        path = Path(frame.filename).resolve()
        if path.is_relative_to(ROOT) and not {".venv", "site-packages"} & set(path.parts):
            return f"{path.relative_to(ROOT).as_posix()}:{frame.lineno}"
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
