"""Liveness and readiness probes."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify
from flask.typing import ResponseReturnValue
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from portal.adapters.sql.migrate import current_revision, head_revision
from portal.web.render import runtime

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    """The process answers; says nothing of its dependencies."""
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz() -> ResponseReturnValue:
    """Ready when the database answers and the schema is migrated."""
    engine = runtime().engine
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        migrated = current_revision(engine) == head_revision()
    except SQLAlchemyError as exc:
        current_app.logger.warning("readyz.database_unreachable error=%s", type(exc).__name__)
        return jsonify(status="unavailable", database="unreachable"), 503
    if not migrated:
        return jsonify(status="unavailable", database="not_migrated"), 503
    return jsonify(status="ready", database="ok")



@bp.get("/favicon.ico")
def favicon() -> ResponseReturnValue:
    return current_app.send_static_file("favicon.svg"), 200, {"Content-Type": "image/svg+xml"}
