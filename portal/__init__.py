"""memory portal: what an AI assistant remembers about each person, and the portal to control it.

`create_app` is imported lazily so that the framework-free domain and services (`portal.domain`, `portal.services`) never
pulls Flask in when it is used on its own.
"""

from __future__ import annotations

from typing import Any


def create_app(config: dict[str, Any] | None = None) -> Any:
    """Build the Flask application (see `portal.app.create_app`)."""
    from portal.app import create_app as build

    return build(config)
