"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, answering like real models do.

Scripted replies: text (fences, prose, trailing commas, cut answers, anything), an HTTP status,
or a delay past the client's timeout. Every request's messages are recorded for the tests.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str = ""
    status: int = 200
    delay: float = 0.0


class FakeLLMServer:
    def __init__(self, port: int = 0) -> None:
        """On a free loopback port, or on `port` (a test bringing a model "back up" where it was down)."""
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.default = Reply('{"facts": [], "summary": "nothing"}')
        # When set, the answer to any request no reply is scripted for, made from its body: a model
        # that answers what it is shown (tests whose calls come from another process, in any order).
        self.answer: Callable[[dict[str, Any]], str] | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                if server.replies:
                    reply = server.replies.popleft()
                else:
                    reply = Reply(server.answer(body)) if server.answer else server.default
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status != 200:
                    payload = json.dumps({"error": {"message": "scripted failure", "type": "server_error"}}).encode()
                else:
                    payload = json.dumps({
                        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                        "model": body.get("model", "fake"),
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply | str) -> None:
        self.replies.extend(r if isinstance(r, Reply) else Reply(r) for r in replies)

    def prompts(self) -> list[str]:
        """Everything the model was shown, system and user messages, request by request."""
        return ["\n".join(m["content"] for m in r["messages"]) for r in self.requests]

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
