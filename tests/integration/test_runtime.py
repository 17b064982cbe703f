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


@pytest.mark.postgres
def test_postgresql_never_gets_text_in_the_clear_unless_the_operator_accepts_it(
        pg_engine: Engine, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 26: only the operator's MEMORY_PLAINTEXT_ON_POSTGRES=accept stores text in the clear on
    PostgreSQL, and the start says what it costs; without keys, a development runtime encrypts with
    a key it makes once under instance/ (the next runtime reads it back), and a database that holds
    text in the clear is refused until `rotate-keys --encrypt-plaintext` encrypted it."""
    with caplog.at_level("WARNING", logger="portal.config"):
        plain = build_runtime(config_for(tmp_path / "plain", MEMORY_PLAINTEXT_ON_POSTGRES="accept"), embedder=None,
                              engine=pg_engine)
    assert plain.store.cipher is None and not (tmp_path / "plain" / "encryption_key").exists()
    assert any("stay readable" in r.getMessage() for r in caplog.records)
    plain.service.remember(Place("bob", "acme"), "Keeps bees")
    with pg_engine.connect() as conn:
        assert conn.execute(select(memories.c.text)).scalar_one() == "Keeps bees"
    with pytest.raises(ConfigError, match="text written in the clear.*rotate-keys --encrypt-plaintext"):
        build_runtime(config_for(tmp_path), embedder=None, engine=pg_engine)
    with pg_engine.begin() as conn:
        conn.execute(memories.delete())
    place = Place("ada", "acme")
    runtime = build_runtime(config_for(tmp_path), embedder=None, engine=pg_engine)
    saved = runtime.service.remember(place, "Allergic to peanuts since childhood")
    with pg_engine.connect() as conn:
        assert "peanut" not in conn.execute(select(memories.c.text)).scalar_one()
    again = build_runtime(config_for(tmp_path), embedder=None, engine=pg_engine)
    assert again.service.get(place, saved.memory.id).text == "Allergic to peanuts since childhood"
    assert again.config.encryption_keys == (tmp_path / "encryption_key").read_text()


def test_a_process_whose_keys_do_not_read_the_database_stops_at_once(engine: Engine, tmp_path: Path) -> None:
    """The first process with keys leaves a probe; another key (a development key made under
    another instance folder, a typo), or none, is refused at start, before it writes anything no
    other process could read. The keys in the other order, the first among others, still read."""
    first, other = FernetCipher.generate_key(), FernetCipher.generate_key()
    build_runtime(config_for(tmp_path, MEMORY_ENCRYPTION_KEYS=first), embedder=None, engine=engine)
    with pytest.raises(ConfigError, match="cannot read this database's text"):
        build_runtime(config_for(tmp_path, MEMORY_ENCRYPTION_KEYS=other), embedder=None, engine=engine)
    if engine.dialect.name == "sqlite":  # on PostgreSQL, no keys at all is refused already, or a key is made
        with pytest.raises(ConfigError, match="MEMORY_ENCRYPTION_KEYS is unset, but this database's text is encrypted"):
            build_runtime(config_for(tmp_path), embedder=None, engine=engine)
    build_runtime(config_for(tmp_path, MEMORY_ENCRYPTION_KEYS=f"{other},{first}"), embedder=None, engine=engine)


def test_a_runtime_disposed_right_after_an_erasure_leaves_no_connection_open(engine: Engine, tmp_path: Path) -> None:
    """The cleaning up after an erasure (PostgreSQL: a VACUUM in a thread, holding a connection)
    is finished before the engine goes: no connection is left open to be collected later."""
    import gc
    import warnings

    runtime = build_runtime(config_for(tmp_path), embedder=None, engine=engine)
    place = Place("ada", "acme")
    runtime.service.remember(place, "Keeps bees on the roof")
    runtime.service.purge_owner(place.owner_id)
    runtime.dispose()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not runtime.store.janitor.pending
