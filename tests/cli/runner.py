"""Running `memory-portal` from the tests, two ways that answer alike (exit status, standard output,
standard error, as `subprocess.CompletedProcess` tells them):

- `run`: in this process, through click's test runner, the same `portal.cli:main` the console
  script calls, with exactly the given environment (a command reads its configuration from it).
  A fraction of a second, where a new Python process costs one or two seconds of start-up.
- `run_console_script`: the installed console script in a real process, for what only a real
  process shows (the command is installed and starts, a server, a working folder, stdio).
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import flask
from click.testing import CliRunner

from portal.cli import main

BIN = Path(sys.executable).parent / "memory-portal"


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run(args: list[str], env: dict[str, str], stdin: str | None = None) -> Ran:
    """`memory-portal ARGS` in this process, under exactly the environment `env` (restored after, so
    no variable outlives the call). An exception that escapes the command is printed on standard
    error as a traceback and exits 1, as the real process would do, so `"Traceback" not in stderr`
    still fails when a command crashes."""
    assert not flask.has_app_context(), "an app context would hand the command its runtime (flask's path)"
    saved = os.environ.copy()
    os.environ.clear()
    os.environ.update(env)
    try:
        result = CliRunner().invoke(main, args, input=stdin, prog_name="memory-portal")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return Ran(result.exit_code, result.stdout, stderr)


def run_console_script(args: list[str], env: dict[str, str], stdin: str | None = None,
                       cwd: Path | None = None) -> Ran:
    """`memory-portal ARGS` as the installed console script, in a new process."""
    done = subprocess.run([str(BIN), *args], env=env, cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)
    return Ran(done.returncode, done.stdout, done.stderr)
