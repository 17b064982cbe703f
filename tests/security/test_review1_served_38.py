"""REVIEW (review1, issue 38, item 20): gunicorn's control socket as an operator meets it, against
`memory-portal serve` (tests/security/live_server.py). FAILS on the code as reviewed (nothing is
fixed here; see the report)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .live_server import make_instance, serve
from .test_served_38 import control


def test_a_second_server_of_the_same_instance_leaves_the_first_its_control_socket(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """REVIEW finding (low): the socket is one per instance folder, not one per server. A second
    `serve` of the same instance on another port (a blue/green restart: start the new one, move the
    proxy, stop the old one) takes the path over (gunicorn unlinks what is there), and whichever
    stops first unlinks it on its way out: the old server's stop leaves the running one with no
    control socket, and while both run `gunicornc` reaches the wrong one. Expected: each server
    keeps its own socket (e.g. gunicorn.<port>.ctl in the instance folder), or the second refuses
    to start while the instance's socket answers."""
    instance = make_instance(tmp_path_factory.mktemp("r1i"), {})
    socket_path = Path(instance.env["MEMORY_INSTANCE_PATH"]) / "gunicorn.ctl"
    old = serve(instance.env, tmp_path_factory.mktemp("r1a") / "gunicorn.log", workers=1)
    new = None
    try:
        new = serve(instance.env, tmp_path_factory.mktemp("r1b") / "gunicorn.log", workers=1)
        old.stop()  # the blue/green switch is over
        assert socket_path.is_socket(), "the running server has no control socket any more"
        assert control(socket_path, "show stats")["pid"] == new.proc.pid
    finally:
        old.stop()
        if new is not None:
            new.stop()
