"""A WSGI middleware shared by the API, browser and staff suites: it keeps (method, path, status)
of every answer, so a fixture can fail the test that provoked a 5xx."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class StatusRecorder:
    def __init__(self, wsgi: Any) -> None:
        self.wsgi = wsgi
        self.seen: list[tuple[str, str, int]] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        def recording(status: str, headers: Any, exc_info: Any = None) -> Any:
            self.seen.append((environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), int(status.split()[0])))
            return start_response(status, headers, exc_info)

        # A file the app sends (a static asset) is read whole and closed at once: werkzeug's test
        # server leaves a file open when the browser drops the connection mid-answer, and the
        # ResourceWarning then fails whichever test is running (seen on a phone-sized e2e test).
        environ.setdefault("wsgi.file_wrapper", _read_whole)
        return self.wsgi(environ, recording)


def _read_whole(file: Any, buffer_size: int = 8192) -> list[bytes]:
    try:
        return [file.read()]
    finally:
        file.close()


@contextmanager
def served(runtime: Any, name: str) -> Iterator[tuple[str, StatusRecorder]]:
    """The real app for `runtime`, served by werkzeug on a free 127.0.0.1 port in a thread, with
    every answer recorded; answers (base URL, recorder) and stops the server afterwards."""
    from werkzeug.serving import BaseWSGIServer, make_server

    from portal.app import create_app

    # Every test signs in from 127.0.0.1: the sign-in throttle would stop the suite, not a guesser.
    app = create_app(config={"LOGIN_RATE_LIMIT": "1000/minute"}, runtime=runtime)
    recorder = StatusRecorder(app.wsgi_app)
    app.wsgi_app = recorder  # type: ignore[method-assign]
    server: BaseWSGIServer = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", recorder
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()
