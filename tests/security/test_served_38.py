"""Issue 38 against what an operator runs: `memory-portal serve` (gunicorn) on an instance set up
through the command line (tests/security/live_server.py), spoken to over real sockets. Each test
failed on the code before its fix, as its docstring says."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from .live_server import Instance, Server, make_instance, serve

GUNICORNC = Path(sys.executable).parent / "gunicornc"


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Instance:
    return make_instance(tmp_path_factory.mktemp("i38"), {})


@pytest.fixture(scope="module")
def server(instance: Instance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = serve(instance.env, tmp_path_factory.mktemp("s38") / "gunicorn.log", workers=1)
    yield running
    running.stop()


def exchange(server: Server, head: str, body: bytes = b"") -> tuple[str, bool]:
    """Send one request on a fresh connection; answer the response's head and whether the server
    then closed the connection at once (within a second: a kept-alive one stays open for gunicorn's
    keep-alive time, 2 s)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        # Sent beside the reading, as a client streaming a body does: the answer may come first.
        sending = threading.Thread(target=_send, args=(conn, head.encode("latin-1") + b"\r\n" + body), daemon=True)
        sending.start()
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = conn.recv(65536)
            assert chunk, f"closed before answering: {received!r}"
            received += chunk
        answer, _, rest = received.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in answer.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(rest) < length:
            rest += conn.recv(65536)
        sending.join(10)
        conn.settimeout(1)
        try:
            closed = conn.recv(1) == b""
        except ConnectionResetError:
            closed = True
        except TimeoutError:
            closed = False
        return answer.decode("latin-1"), closed


def _send(conn: socket.socket, data: bytes) -> None:
    try:
        conn.sendall(data)
    except OSError:
        pass  # the server closed while the body was on its way: the answer tells why


def control(path: Path, command: str) -> dict[str, object]:
    done = subprocess.run([str(GUNICORNC), "-s", str(path), "-c", command, "-j"], capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


# ------------------------------------------------------------------ 19. the access log


def test_the_access_log_writes_no_control_character_a_path_carries(server: Server) -> None:
    """gunicorn's access log wrote the decoded path (`%(U)s`): `%0A` forged a whole line of its own,
    NUL and a terminal's escape went into the log as they were."""
    forged = '127.0.0.1 "GET /forged-by-a-path" 200 0 0ms'
    path = "/nowhere%0A" + forged.replace(" ", "%20").replace('"', "%22") + "%00%1B[31m%C3%A9"
    head, _ = exchange(server, f"GET {path} HTTP/1.1\r\nHost: portal.test\r\nConnection: close\r\n")
    assert head.startswith("HTTP/1.1 404")
    logged = server.output()
    assert not [line for line in logged.splitlines() if line.startswith(forged[:30])], logged[-2000:]
    assert "\x00" not in logged and "\x1b" not in logged
    (line,) = [line for line in logged.splitlines() if "/nowhere" in line]
    assert '"GET /nowhere%0A127.0.0.1%20%22GET%20/forged-by-a-path%22' in line and "%00%1B[31m%C3%A9" in line


# ------------------------------------------------------------------ 20. the control socket


def test_each_instance_has_its_control_socket_in_its_own_folder(server: Server, instance: Instance,
                                                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every `serve` put gunicorn's control socket at one path in the home folder (or
    $XDG_RUNTIME_DIR): a second server on the machine took it over, and `gunicornc` reached the
    wrong one."""
    other = make_instance(tmp_path_factory.mktemp("j38"), {})
    second = serve(other.env, tmp_path_factory.mktemp("t38") / "gunicorn.log", workers=1)
    try:
        for running, folder in ((server, instance.env["MEMORY_INSTANCE_PATH"]),
                                (second, other.env["MEMORY_INSTANCE_PATH"])):
            path = Path(folder) / f"gunicorn.{running.port}.ctl"
            assert path.is_socket(), f"no control socket at {path}"
            assert control(path, "show stats")["pid"] == running.proc.pid
    finally:
        second.stop()
    assert not (Path(other.env["MEMORY_INSTANCE_PATH"]) / f"gunicorn.{second.port}.ctl").exists()  # gone with it
    path = Path(instance.env["MEMORY_INSTANCE_PATH"]) / f"gunicorn.{server.port}.ctl"
    assert control(path, "show stats")["pid"] == server.proc.pid


# ------------------------------------------------------------------ 23. a body left unread


@pytest.mark.parametrize(("path", "auth"), [("/api/v1/people/ada/memories", True), ("/v1/memories/", True),
                                            ("/api/v1/people/ada/memories", False)])
def test_an_answer_that_leaves_the_body_unread_says_connection_close(server: Server, instance: Instance,
                                                                      path: str, auth: bool) -> None:
    """After a 413 (or a 401 that read nothing) gunicorn said `Connection: keep-alive`, then drained
    64 KiB of the body, gave up and closed: a client reusing the connection met a closed socket."""
    body = b'{"text": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    key = f"Authorization: Bearer {instance.key}\r\n" if auth else ""
    head, closed = exchange(server, f"POST {path} HTTP/1.1\r\nHost: portal.test\r\nContent-Type: application/json\r\n"
                                    f"{key}Content-Length: {len(body)}\r\n", body)
    status = head.split("\r\n")[0]
    assert status.startswith("HTTP/1.1 413" if auth else "HTTP/1.1 401"), head
    assert "connection: close" in head.lower(), head
    assert closed


def test_an_answer_that_read_its_body_keeps_the_connection(server: Server, instance: Instance) -> None:
    """The other side of the rule: a request whose body was read to its end keeps the connection."""
    body = b'{"text": "Likes green tea"}'
    head, closed = exchange(server, f"POST /api/v1/people/ada/memories HTTP/1.1\r\nHost: portal.test\r\n"
                                    f"Authorization: Bearer {instance.key}\r\nContent-Type: application/json\r\n"
                                    f"Content-Length: {len(body)}\r\n", body)
    assert head.startswith("HTTP/1.1 201") and "connection: keep-alive" in head.lower(), head
    assert not closed
