"""One POST to a model server within a deadline: the embedding endpoint's and the rerank server's.

httpx's timeout bounds each wait (to connect, to send, for the next bytes), not the whole answer:
a server answering slowly but steadily would hold the caller as long as it likes. Here the deadline
is also checked between the answer's chunks, and an answer past `max_bytes` is given up too, so a
broken or hostile server can cost the caller neither more time than the deadline nor the memory
of an answer it never needed.
"""

from __future__ import annotations

import time
from typing import Any

import httpx


def post_within(client: httpx.Client, url: str, body: dict[str, Any], deadline: float,
                max_bytes: int | None = None) -> tuple[int, bytes]:
    """The status and the whole answer of one POST, or TimeoutError past `deadline` (a
    `time.monotonic()` time), ValueError past `max_bytes`."""
    with client.stream("POST", url, json=body, timeout=max(0.001, deadline - time.monotonic())) as answer:
        chunks, size = [], 0
        for chunk in answer.iter_bytes():
            if time.monotonic() > deadline:
                raise TimeoutError("deadline")
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise ValueError("answer too large")
            chunks.append(chunk)
        return answer.status_code, b"".join(chunks)
