"""What every flow shares (stdlib only: it runs in each integration's own environment): the stores
to run against, from FLOW_STORES ({name: {url, key}}), and one JSON line on standard output, what
the flow saw per store. A flow that raises records the exception under "error" beside what it had
seen so far, and the other store still runs."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

Flow = Callable[[str, str, dict[str, Any]], None]


def run(flow: Flow) -> None:
    out: dict[str, Any] = {}
    for name, store in json.loads(os.environ["FLOW_STORES"]).items():
        seen: dict[str, Any] = {}
        try:
            flow(store["url"], store["key"], seen)
        except Exception as exc:  # what the integration raised is what the test shows
            seen["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
        out[name] = seen
    print(json.dumps(out, default=str))


def until(read: Callable[[], Any], done: Callable[[Any], bool], seconds: float = 20.0) -> Any:
    """`read()` again until `done` holds of what it gives or the time is up: what is added with
    inference is learnt in the background, on mem0's platform as here. The last value read."""
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def results(answer: Any) -> list[dict[str, Any]]:
    """The memories of an answer mem0's clients give as a list or as {"results": [...]}."""
    return list(answer["results"] if isinstance(answer, dict) else answer)


def texts(answer: Any) -> list[str]:
    return sorted(m["memory"] for m in results(answer))
