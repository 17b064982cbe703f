"""A sentence-transformers model of the plain kind (a transformer, mean pooling, optionally
normalised: all-MiniLM-L6-v2 and its like) run by ONNX Runtime instead of torch.

The same weights give the same vectors (within 1e-6; the tests compare them with torch's) for a
third of the CPU time: a short query takes about 2.5 ms here against 7 ms through torch, whose
per-operation overhead dominates on inputs of a few words. The ONNX graph is exported once from
the model folder with torch (the transformer plus the mean pooling, so the runtime needs neither
torch nor sentence-transformers code), written under a cache folder by an atomic rename (several
workers starting together cannot see half a file) and named by a fingerprint of what the model's
files hold: the same weights installed again (a fresh virtualenv, new file times) find the same
export. Reading the 90 MB of weights to name them takes 70 to 150 ms, so what they were found to
hold is remembered beside the exports, under the files' identity and times (`_identity`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("portal.embedder")

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Bumped when the exported graph changes, so an old file is never picked up.
_EXPORT_FORMAT = "1"


def default_cache_dir() -> Path:
    configured = os.environ.get("MEMORY_MODEL_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "memory-portal" / "onnx"


def plain_model(path: Path) -> bool:
    """Whether the folder holds a model this runner reproduces exactly: a transformer, then mean
    pooling alone, then at most a normalisation, and no prompts."""
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        types = [m["type"] for m in modules]
        if types not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]):
            return False
        pooling = json.loads((path / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
        settings = path / "config_sentence_transformers.json"
        prompts = json.loads(settings.read_text(encoding="utf-8")).get("prompts") if settings.exists() else None
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True}
    return modes == {"pooling_mode_mean_tokens"} and not any((prompts or {}).values())


def fingerprint(path: Path, cache_dir: Path | None = None) -> str:
    """Names the export: the model's files (names and contents) and the format, never their times,
    so copies of the same weights share one export. With `cache_dir`, the name is remembered there
    for as long as no file of the folder changes (`_identity`)."""
    files = sorted(p for p in path.rglob("*") if p.is_file())
    seen = _identity(path, files)
    remembered = cache_dir / "fingerprints" / seen if cache_dir is not None else None
    found = _recall(remembered) if remembered is not None else None
    if found is not None:
        return found
    digest = hashlib.sha256(_EXPORT_FORMAT.encode())
    for file in files:
        with file.open("rb") as f:
            digest.update(f"{file.relative_to(path)}\0{hashlib.file_digest(f, 'sha256').hexdigest()}\n".encode())
    named = digest.hexdigest()[:16]
    if remembered is not None and _identity(path, files) == seen:  # nothing changed while it was read
        _remember(remembered, named)
    return named


_FINGERPRINT = re.compile(r"[0-9a-f]{16}")


def _identity(path: Path, files: Sequence[Path]) -> str:
    """The folder's files as the system sees them: where each is (device, inode), its size, and
    both its times. Writing to a file changes its change time (ctime), which no file operation sets
    back (touch and utime set the modification time only): the same identity means the same bytes."""
    digest = hashlib.sha256(str(path.resolve()).encode("utf-8", "surrogatepass"))
    for file in files:
        s = file.stat()
        digest.update(f"{file.relative_to(path)}\0{s.st_dev}\0{s.st_ino}\0{s.st_size}\0{s.st_mtime_ns}"
                      f"\0{s.st_ctime_ns}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]


def _recall(where: Path) -> str | None:
    try:
        found = where.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None
    return found if _FINGERPRINT.fullmatch(found) else None


def _remember(where: Path, named: str) -> None:
    """Written whole or not at all (a rename), so a worker starting beside this one reads a whole
    name or none; a cache that cannot be written only costs reading the weights at the next start."""
    temporary = None
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=where.parent, suffix=".part")
        with os.fdopen(handle, "w", encoding="ascii") as f:
            f.write(named)
        os.replace(temporary, where)
    except OSError as exc:
        log.debug("model fingerprint not remembered", extra={"error": type(exc).__name__})
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)


class OnnxSentenceModel:
    """Encodes texts to unit-length float32 vectors with ONNX Runtime. Not thread-safe on its own
    (the tokenizer is not): `LocalEmbedder` holds a lock around it."""

    def __init__(self, path: Path, cache_dir: Path | None = None, threads: int | None = None) -> None:
        import onnxruntime as ort
        from transformers import AutoTokenizer

        self.path = path
        settings = _read_json(path / "sentence_bert_config.json")
        self.max_length = int(settings.get("max_seq_length") or 256)
        self.lower = bool(settings.get("do_lower_case"))
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.file = self.export(path, cache_dir or default_cache_dir())
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or _threads()
        options.inter_op_num_threads = 1
        # No busy-waiting between requests: several workers share the machine's cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(self.file), options, providers=["CPUExecutionProvider"])
        self.dimension = int(self.session.get_outputs()[0].shape[-1])

    @staticmethod
    def export(path: Path, cache_dir: Path) -> Path:
        """The model's ONNX file under cache_dir, exported first if it is not there yet."""
        target = cache_dir / f"{path.name}-{fingerprint(path, cache_dir)}.onnx"
        if target.exists():
            return target
        import torch
        from transformers import AutoModel, AutoTokenizer

        cache_dir.mkdir(parents=True, exist_ok=True)
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        model = _MeanPooled(AutoModel.from_pretrained(str(path)).eval())
        sample = tokenizer(["an example sentence", "a second, longer example sentence"], padding=True, return_tensors="pt")
        handle, temporary = tempfile.mkstemp(dir=cache_dir, suffix=".onnx.part")
        os.close(handle)
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    model, tuple(sample[name] for name in _INPUTS), temporary,
                    input_names=list(_INPUTS), output_names=["pooled"],
                    dynamic_axes={**{name: {0: "batch", 1: "tokens"} for name in _INPUTS}, "pooled": {0: "batch"}},
                    opset_version=17, dynamo=False,
                )
            os.replace(temporary, target)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        log.info("embedding model exported to ONNX", extra={"model": path.name, "bytes": target.stat().st_size})
        return target

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        # Longest first, as sentence-transformers does, so each batch pads to similar lengths.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            batch = [texts[i].lower() if self.lower else texts[i] for i in chosen]
            encoded = self.tokenizer(batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="np")
            feed = {name: encoded[name].astype(np.int64) for name in _INPUTS if name in encoded}
            if "token_type_ids" not in feed:
                feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
            pooled = self.session.run(None, feed)[0]
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            out[chosen] = pooled / norms
        return out


class _MeanPooled:
    """The transformer with sentence-transformers' mean pooling on top, as one module to export."""

    def __new__(cls, transformer: Any) -> Any:
        import torch

        class MeanPooled(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.transformer = transformer

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                hidden = self.transformer(
                    input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
                ).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

        return MeanPooled()


def _threads() -> int:
    raw = os.environ.get("OMP_NUM_THREADS", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else (os.cpu_count() or 1)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
