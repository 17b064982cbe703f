"""A WSGI middleware shared by the API, browser and staff suites: it keeps (method, path, status)
of every answer, so a fixture can fail the test that provoked a 5xx."""

from __future__ import annotations

from typing import Any


class StatusRecorder:
    def __init__(self, wsgi: Any) -> None:
        self.wsgi = wsgi
        self.seen: list[tuple[str, str, int]] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        def recording(status: str, headers: Any, exc_info: Any = None) -> Any:
            self.seen.append((environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), int(status.split()[0])))
            return start_response(status, headers, exc_info)

        return self.wsgi(environ, recording)
