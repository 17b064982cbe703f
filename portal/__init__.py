"""memory portal: what an AI assistant remembers about each person, and the portal to control it.

`create_app` is imported lazily so that the framework-free domain and services (`portal.domain`,
`portal.services`) never pull Flask in when they are used on their own.
"""

from __future__ import annotations

from typing import Any


def create_app(config: dict[str, Any] | None = None) -> Any:
    """The Flask application (see `portal.app.create_app`) with the command line's commands, as
    `flask --app portal <command>` finds them."""
    # why: a local import so that importing `portal` (the domain, the services) never pulls Flask in.
    from portal.app import create_app as build
    from portal.cli import register  # why: the command line is its own shell, and it imports the app

    app = build(config)
    register(app)
    return app
