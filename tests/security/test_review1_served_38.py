"""REVIEW (review1, issue 38, item 20): gunicorn's control socket as an operator meets it, against
`memory-portal serve` (tests/security/live_server.py). Failed on the code as reviewed, whose one
socket per instance folder (gunicorn.ctl) the two servers shared; each server now has its own,
gunicorn.PORT.ctl, the path the test reads."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .live_server import BIN, make_instance, serve
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
    folder = Path(instance.env["MEMORY_INSTANCE_PATH"])
    old = serve(instance.env, tmp_path_factory.mktemp("r1a") / "gunicorn.log", workers=1)
    new = None
    try:
        new = serve(instance.env, tmp_path_factory.mktemp("r1b") / "gunicorn.log", workers=1)
        assert control(folder / f"gunicorn.{old.port}.ctl", "show stats")["pid"] == old.proc.pid  # each its own
        old.stop()  # the blue/green switch is over
        socket_path = folder / f"gunicorn.{new.port}.ctl"
        assert socket_path.is_socket(), "the running server has no control socket any more"
        assert control(socket_path, "show stats")["pid"] == new.proc.pid
        assert not (folder / f"gunicorn.{old.port}.ctl").exists()  # gone with its server
    finally:
        old.stop()
        if new is not None:
            new.stop()


def test_a_server_of_the_instance_on_the_same_port_of_another_address_is_refused_its_socket(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The socket is named by the port alone: a second `serve` of the instance on the same port of
    another address (127.0.0.2) would take the running server's socket over (gunicorn unlinks what
    is there). It refuses to start in one line, and the first keeps its socket."""
    instance = make_instance(tmp_path_factory.mktemp("r1j"), {})
    running = serve(instance.env, tmp_path_factory.mktemp("r1c") / "gunicorn.log", workers=1)
    try:
        path = Path(instance.env["MEMORY_INSTANCE_PATH"]) / f"gunicorn.{running.port}.ctl"
        second = subprocess.run([str(BIN), "serve", "--host", "127.0.0.2", "--port", str(running.port)],
                                env=instance.env, capture_output=True, text=True, timeout=60, check=False)
        assert (second.returncode, second.stderr) == (1, (
            f"Error: another server of this instance serves port {running.port} already (its control socket "
            f"{path} answers): stop it, or serve on another --port\n")), second.stderr
        assert control(path, "show stats")["pid"] == running.proc.pid
    finally:
        running.stop()
