"""The assistant's picture of the person: the portrait an app gives the assistant at the start of a
conversation (`MemoryService.portrait`, the same call the MCP server makes), shown to the person
with what it leaves out and how a memory gets into it. A read: it records no use and changes nothing.
"""

from __future__ import annotations

from flask import Blueprint, render_template
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required

from portal.web.memories import context, service

bp = Blueprint("portrait", __name__)


@bp.get("/portrait")
@login_required
def show() -> ResponseReturnValue:
    svc = service()
    # Masked and with the defaults, as the MCP server hands it to a model: word for word what it reads.
    portrait = svc.portrait(current_user.place, masked=True)
    return render_template("portrait/index.html", portrait=portrait, floor=svc.options.portrait_min_importance,
                           budget=svc.options.portrait_max_length, **context())
