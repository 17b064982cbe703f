"""A fake rerank server on 127.0.0.1 (our boundary: portal.adapters.reranker speaks to it as to
text-embeddings-inference or a Cohere-compatible `/rerank`). It scores each text by a rule the
test sets (`score`), answers in the shape of `api`, and can fail, stall or answer nonsense."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeRerankServer:
    def __init__(self, api: str = "cohere") -> None:
        self.api = api
        self.score: Callable[[str, str], float] = lambda query, text: 0.0
        self.mode = "ok"  # ok, error, slow, partial, nan, garbage
        self.delay = 1.0
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                owner.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if owner.mode == "slow":
                    time.sleep(owner.delay)
                if owner.mode == "error":
                    self._send(500, {"error": "overloaded"})
                    return
                texts = body.get("texts" if owner.api == "tei" else "documents") or []
                rows = [{"index": i, "score": owner.score(body.get("query", ""), t)} for i, t in enumerate(texts)]
                if owner.mode == "partial":
                    rows = rows[1:]
                if owner.mode == "nan":
                    rows = [{**r, "score": float("nan")} for r in rows]
                rows.sort(key=lambda r: -r["score"] if r["score"] == r["score"] else 0)
                if owner.mode == "garbage":
                    self._send(200, {"hello": "world"})
                elif owner.api == "tei":
                    self._send(200, rows)
                else:
                    self._send(200, {"results": [{"index": r["index"], "relevance_score": r["score"]} for r in rows]})

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its deadline)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeRerankServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
