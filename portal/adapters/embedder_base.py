"""What every embedder shares: `EmbedderError`, the error of a backend that could not answer, and
the check of what `embed` is handed (a sequence of texts, for one of the `PURPOSES`). The local
model is in `.embedders`, the OpenAI-compatible endpoint in `.openai_embedder`.
"""

from __future__ import annotations

from collections.abc import Sequence

PURPOSES = ("document", "query")


class EmbedderError(RuntimeError):
    """An embedding backend could not answer. The message never holds the texts sent."""


def _text_list(texts: Sequence[str], purpose: str) -> list[str]:
    # A bare str is a Sequence[str] too; embedding it would quietly embed each character.
    if isinstance(texts, str):
        raise TypeError("embed takes a sequence of texts, not a single str")
    if purpose not in PURPOSES:
        raise ValueError(f"purpose is one of {PURPOSES}, not {purpose!r}")
    return list(texts)

