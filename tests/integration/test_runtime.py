"""The wired runtime against real databases: encryption at rest, the AI switch, the real model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select, text
from sqlalchemy.engine import Engine

from portal.adapters.cipher import FernetCipher
from portal.adapters.sql.tables import memories, memory_revisions
from portal.bootstrap import build_runtime
from portal.config import ConfigError, load_config
from portal.domain.types import Place, Saved


class WordsEmbedder:
    """A deterministic stand-in at our own boundary: one dimension per hashed word."""

    model_id = "words-16"

    def embed(self, texts, purpose="document"):  # type: ignore[no-untyped-def]
        import zlib

        out = np.zeros((len(texts), 16), np.float32)
        for row, t in enumerate(texts):
            for w in t.lower().split():
                out[row, zlib.crc32(w.encode()) % 16] += 1
        return out, self.model_id


def config_for(tmp_path: Path, **env: str):  # type: ignore[no-untyped-def]
    return load_config({"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none", **env})


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest) -> Engine:
    return request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")


def test_encrypted_text_never_reaches_the_database_and_is_still_found(engine: Engine, tmp_path: Path) -> None:
    key = FernetCipher.generate_key()
    runtime = build_runtime(config_for(tmp_path, MEMORY_ENCRYPTION_KEYS=key), embedder=None, engine=engine)
    place = Place("ada", "acme")
    saved = runtime.service.remember(place, "Allergic to peanuts since childhood", kind="fact")
    assert isinstance(saved, Saved)
    runtime.service.update(place, saved.memory.id, text="Allergic to peanuts and cashews")
    with engine.connect() as conn:
        stored = conn.execute(select(memories.c.text, memories.c.search_text)).one()
        earlier = conn.execute(select(memory_revisions.c.text)).scalar_one()
    assert "peanut" not in stored.text and stored.search_text is None
    assert "peanut" not in earlier
    hits = runtime.service.recall(place, "peanuts")
    assert [h.memory.id for h in hits] == [saved.memory.id]
    assert hits[0].memory.text == "Allergic to peanuts and cashews"
    # Duplicates by words still meet, through a keyed hash.
    again = runtime.service.remember(place, "allergic to PEANUTS and cashews!")
    assert isinstance(again, Saved) and again.replaced_id == saved.memory.id


def test_an_identity_cipher_or_bad_key_stops_start_up(tmp_path: Path, sqlite_engine: Engine) -> None:
    with pytest.raises(ConfigError, match="MEMORY_ENCRYPTION_KEYS"):
        build_runtime(config_for(tmp_path, MEMORY_ENCRYPTION_KEYS="not-a-key"), embedder=None, engine=sqlite_engine)


def test_tenant_ai_off_keeps_privacy_operations_and_stores_without_vectors(engine: Engine, tmp_path: Path) -> None:
    runtime = build_runtime(config_for(tmp_path), embedder=WordsEmbedder(), engine=engine)
    tenant = runtime.tenants.create("Acme", ai_enabled=False)
    place = Place("ada", tenant.id)
    saved = runtime.service.remember(place, "Plays the cello on Sundays")
    assert isinstance(saved, Saved) and not saved.memory.has_vector
    corrected = runtime.service.update(place, saved.memory.id, text="Plays the viola on Sundays")
    assert isinstance(corrected, Saved) and not corrected.memory.has_vector
    assert [h.match for h in runtime.service.recall(place, "viola")] == ["lexical"]
    assert runtime.service.reindex() == 0  # the AI is off: nothing is sent to the embedder
    runtime.tenants.set_ai(tenant.id, True)
    assert runtime.service.reindex() == 1
    assert runtime.service.get(place, saved.memory.id).has_vector
    hit = runtime.service.recall(place, "viola on Sundays")[0]
    assert hit.match == "hybrid"


def test_global_ai_switch(tmp_path: Path, sqlite_engine: Engine) -> None:
    runtime = build_runtime(config_for(tmp_path, MEMORY_AI_ENABLED="false"), embedder=WordsEmbedder(), engine=sqlite_engine)
    saved = runtime.service.remember(Place("ada", ""), "Learning Portuguese")
    assert isinstance(saved, Saved) and not saved.memory.has_vector


@pytest.mark.slow
def test_the_local_model_finds_by_meaning(engine: Engine, tmp_path: Path) -> None:
    from portal.adapters.embedders import LocalEmbedder

    runtime = build_runtime(config_for(tmp_path), embedder=LocalEmbedder(), engine=engine)
    place = Place("ada", "")
    texts = [
        "Has a golden retriever called Biscuit",
        "Works as a nurse on night shifts",
        "Is saving money to buy a flat in Lyon",
        "Prefers tea to coffee",
    ]
    ids = {t: runtime.service.remember(place, t).memory.id for t in texts}  # type: ignore[union-attr]
    hits = runtime.service.recall(place, "what pet does she own?", limit=2)
    assert hits[0].memory.id == ids["Has a golden retriever called Biscuit"]
    assert hits[0].match == "vector"
    # A near-identical sentence is a duplicate by meaning: same id, a new revision.
    again = runtime.service.remember(place, "Has a golden retriever named Biscuit")
    assert isinstance(again, Saved) and again.replaced_id == ids["Has a golden retriever called Biscuit"]
    with runtime.engine.connect() as conn:
        dims = conn.execute(text("SELECT DISTINCT embedding_dim FROM memories")).scalars().all()
    assert dims == [384]
