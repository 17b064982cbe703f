"""An account's password on the command line (issue 38, item 12): on a terminal `user create` and
`user set-password` ask for it, hidden, twice; `--password-stdin` reads it from standard input for
scripts; with neither a terminal nor `--password-stdin`, one line says how to give it. The terminal
is a real one (a pseudo-terminal the console script runs on, as in an operator's shell)."""

from __future__ import annotations

import os
import pty
import select
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from portal.adapters.sql.accounts import Accounts
from portal.adapters.sql.engine import make_engine

from .runner import BIN, run

PASSWORD = "correct horse battery"  # noqa: S105 - a test account's


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    base.update(MEMORY_INSTANCE_PATH=str(tmp_path / "instance"), MEMORY_EMBEDDER="none")
    for args in (["db", "upgrade"], ["tenant", "create", "Acme"]):
        assert run(args, base).returncode == 0
    return base


@pytest.fixture
def accounts(env: dict[str, str]) -> Iterator[Accounts]:
    engine = make_engine(f"sqlite:///{env['MEMORY_INSTANCE_PATH']}/memory.db")
    yield Accounts(engine)
    engine.dispose()


class Terminal:
    """The console script on a pseudo-terminal of its own (its standard input and error, and
    /dev/tty), its standard output captured apart, as `VALUE=$(memory-portal ...)` in a shell."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.out, out_w = os.pipe()
        pid, self.fd = pty.fork()
        if pid == 0:  # the child: the command
            os.dup2(out_w, 1)
            os.execve(str(BIN), [str(BIN), *args], env)
        os.close(out_w)
        self.pid, self.shown, self.found = pid, "", 0

    def wait_for(self, text: str, timeout: float = 60) -> None:
        """Until `text` is shown after what the last wait found (a read may bring more than one prompt)."""
        deadline = time.monotonic() + timeout
        while text not in self.shown[self.found:]:
            assert time.monotonic() < deadline, f"{text!r} never shown; shown: {self.shown!r}"
            if select.select([self.fd], [], [], 0.2)[0]:
                try:
                    self.shown += os.read(self.fd, 4096).decode(errors="replace")
                except OSError:  # the command ended
                    break
        assert text in self.shown[self.found:], f"{text!r} never shown; shown: {self.shown!r}"
        self.found = self.shown.index(text, self.found) + len(text)

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def end(self) -> tuple[int, str, str]:
        """The exit status, what the terminal showed, and the standard output."""
        try:
            while select.select([self.fd], [], [], 5)[0]:
                self.shown += os.read(self.fd, 4096).decode(errors="replace")
        except OSError:
            pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        with os.fdopen(self.out, encoding="utf-8") as out:
            return os.waitstatus_to_exitcode(status), self.shown, out.read()


def test_user_create_on_a_terminal_asks_the_password_twice_and_never_shows_it(
        env: dict[str, str], accounts: Accounts) -> None:
    term = Terminal(["user", "create", "--email", "ada@acme.example", "--name", "Ada", "--tenant", "Acme"], env)
    term.wait_for("Password: ")
    term.type(PASSWORD)
    term.wait_for("Repeat for confirmation: ")
    term.type("a different password")
    term.wait_for("do not match")
    term.wait_for("Password: ")  # asked again, from the start
    term.type(PASSWORD)
    term.wait_for("Repeat for confirmation: ")
    term.type(PASSWORD)
    status, shown, out = term.end()
    assert status == 0, shown
    assert PASSWORD not in shown and "a different password" not in shown  # hidden as it was typed
    found = accounts.authenticate("ada@acme.example", PASSWORD)
    assert found is not None and out == f"{found.owner_id}\n"  # the prompts are not in what a script captures


def test_set_password_on_a_terminal_asks_the_new_one_twice(env: dict[str, str], accounts: Accounts) -> None:
    made = run(["user", "create", "--email", "sam@acme.example", "--name", "Sam", "--tenant", "Acme", "--role", "staff",
                "--password-stdin"], env, stdin=f"{PASSWORD}\n")
    assert made.returncode == 0, made.stderr
    term = Terminal(["user", "set-password", "--email", "sam@acme.example"], env)
    term.wait_for("New password: ")
    term.type("a brand new password")
    term.wait_for("Repeat for confirmation: ")
    term.type("a brand new password")
    status, shown, out = term.end()
    assert status == 0 and out == "password changed for sam@acme.example; its sessions have ended\n", shown
    assert "a brand new password" not in shown + out
    assert accounts.authenticate("sam@acme.example", "a brand new password") is not None
    assert accounts.authenticate("sam@acme.example", PASSWORD) is None


def test_without_a_terminal_or_password_stdin_one_line_says_how(env: dict[str, str], accounts: Accounts) -> None:
    made = run(["user", "create", "--email", "sam@acme.example", "--name", "Sam", "--tenant", "Acme", "--role", "staff",
                "--password-stdin"], env, stdin=f"{PASSWORD}\n")
    assert made.returncode == 0, made.stderr
    for args in (["user", "create", "--email", "bo@acme.example", "--name", "Bo", "--tenant", "Acme"],
                 ["user", "set-password", "--email", "sam@acme.example"]):
        done = run(args, env, stdin="a piped new password\n")  # piped, not typed: not read without --password-stdin
        assert done.returncode == 1 and done.stdout == "", done.stdout
        assert done.stderr.strip().splitlines() == [
            "Error: no terminal to ask the password on: give it on standard input with --password-stdin"], done.stderr
    assert accounts.find("bo@acme.example") == []
    assert accounts.authenticate("sam@acme.example", PASSWORD) is not None
