"""The `memory-portal` command line (also under `flask --app portal ...`).

Each command builds the runtime from the environment, calls one service function and prints
ids and counts, never a person's words (except `export`, whose whole point is to hand them over).
Every error is one line with a non-zero exit (`portal.cli.errors`).
"""

from __future__ import annotations

from typing import Any

import click

from portal.cli import mcp, operations, setup
from portal.cli.errors import errors_as_one_line
from portal.cli.setup import DEMO_EMAIL, DEMO_LEARNT, DEMO_MEMORIES, DEMO_OWNER, DEMO_PASSWORD, DEMO_TENANT


@click.group(name="memory-portal")
def main() -> None:
    """memory portal: what an AI assistant remembers about each person."""


for command in (*setup.COMMANDS, *operations.COMMANDS, mcp.mcp_command):
    main.add_command(errors_as_one_line(command))


def register(app: Any) -> None:
    """Make the same commands available as `flask --app portal <command>`."""
    for command in main.commands.values():
        app.cli.add_command(command)


__all__ = ["DEMO_EMAIL", "DEMO_LEARNT", "DEMO_MEMORIES", "DEMO_OWNER", "DEMO_PASSWORD", "DEMO_TENANT", "main", "register"]
