"""How a portrait is written for a system prompt: bullets, lines grouped under their dates, or JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from portal.domain.types import Memory

FORMATS = ("bullets", "dated", "json")


def render(format: str, kept: Sequence[Memory], text_of: Callable[[Memory], str]) -> str:
    """The memories as the portrait's text, in `format`."""
    if format == "json":
        return json.dumps(
            [{"id": m.id, "text": text_of(m), "kind": m.kind, "importance": m.importance} for m in kept],
            ensure_ascii=False,
        )
    if format == "dated":
        groups: dict[str, list[str]] = {}
        for m in sorted(kept, key=lambda m: m.created_at, reverse=True):
            groups.setdefault(m.created_at.date().isoformat(), []).append(text_of(m))
        return "\n".join(f"**{day}**\n" + "\n".join(lines) for day, lines in groups.items())
    return "\n".join(f"- {text_of(m)}" for m in kept)
