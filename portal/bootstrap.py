"""The composition root: turns a Config into an engine, a store, an embedder and the service.

Nothing here runs at import time; the web app, the CLI and the tests each call `build_runtime`.
The embedding model itself loads on first use, not here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import partial

from sqlalchemy.engine import Engine

from portal.adapters.cipher import FernetCipher, check_cipher
from portal.adapters.embedders import build_embedder
from portal.adapters.llm import build_llm
from portal.adapters.queue import HueyQueue
from portal.adapters.reranker import HttpReranker
from portal.adapters.sql.accounts import Accounts
from portal.adapters.sql.api_keys import ApiKeys
from portal.adapters.sql.audit import AuditLog
from portal.adapters.sql.engine import is_postgres, make_engine
from portal.adapters.sql.keycheck import KeysMismatch
from portal.adapters.sql.keycheck import check_keys as keys_fit
from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.tenants import Tenants
from portal.adapters.sql.uow import SqlRecords
from portal.config import PLAINTEXT_ACCEPTED, Config, ConfigError, encryption_keys_for
from portal.domain.options import LLM, Embedder, Options
from portal.domain.rules import load_rules
from portal.domain.types import Place
from portal.services.administration import Administration
from portal.services.memory_service import MemoryService
from portal.services.people import People
from portal.services.support import Support

log = logging.getLogger("portal.config")


@dataclass
class Runtime:
    config: Config
    engine: Engine
    store: SqlStore
    records: SqlRecords
    service: MemoryService
    support: Support
    administration: Administration
    people: People
    queue: HueyQueue  # background consolidation (portal.adapters.queue); `memory-portal worker` runs it

    # the records, for the command line and tests (views and handlers go through the services)
    @property
    def tenants(self) -> Tenants:
        return self.records.tenants

    @property
    def accounts(self) -> Accounts:
        return self.records.accounts

    @property
    def audit(self) -> AuditLog:
        return self.records.audit

    @property
    def api_keys(self) -> ApiKeys:
        return self.records.api_keys

    def dispose(self) -> None:
        self.service.ctx.uses.close()  # what recalls handed out since the last batch, written
        self.queue.close()
        # The cleaning up after erasures (its VACUUM holds a connection) finished before the engine
        # goes: a connection it held would otherwise stay open until collected.
        self.store.settle(10)
        self.engine.dispose()


def build_runtime(
    config: Config, embedder: Embedder | None | str = "config", engine: Engine | None = None, llm: LLM | None | str = "config",
    check_keys: bool = True,
) -> Runtime:
    """Wire everything from `config`. `embedder` and `llm` may be handed in (tests pass fakes or None).
    Refuses (ConfigError) encryption keys that do not read the database's text, or none where it is
    encrypted (`portal.adapters.sql.keycheck`); `check_keys=False` only for `rotate-keys`, which
    mends what the check refuses."""
    engine = engine or make_engine(config.database_url)
    keys = encryption_keys_for(config, is_postgres(engine))
    if keys != config.encryption_keys:
        config = replace(config, encryption_keys=keys)  # a development key made under instance/
    if keys is None and is_postgres(engine):
        log.warning("config.plaintext_on_postgres %s", PLAINTEXT_ACCEPTED)
    cipher = None
    if config.encryption_keys:
        try:
            cipher = FernetCipher.from_env_value(config.encryption_keys)
            check_cipher(cipher)
        except ValueError as exc:
            message = str(exc)
            raise ConfigError(message if "MEMORY_ENCRYPTION_KEYS" in message else f"MEMORY_ENCRYPTION_KEYS: {message}") from None
    checked = True
    if check_keys:
        try:
            checked = keys_fit(engine, cipher)
        except KeysMismatch as exc:
            raise ConfigError(str(exc)) from None
    try:
        rules = load_rules(config.rules_file) if config.rules_file else []
    except (OSError, ValueError) as exc:
        raise ConfigError(f"MEMORY_RULES_FILE: {exc}") from None
    if embedder == "config":
        try:
            chosen = build_embedder(
                config.embedder, config.embedding_model, config.embedding_base_url, config.embedding_api_key,
                backend=config.embedding_backend, timeout=config.embedding_timeout,
            )
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    else:
        chosen = embedder  # type: ignore[assignment]
    chosen_llm: LLM | None
    if llm == "config":
        chosen_llm = build_llm(config.llm_base_url, config.llm_model, config.llm_api_key, config.llm_timeout)
    else:
        chosen_llm = llm  # type: ignore[assignment]
    prompts: dict[str, str] = {}
    if config.prompts_dir:
        for path in config.prompts_dir.glob("consolidate.*.txt"):
            prompts[path.name.split(".")[1]] = path.read_text(encoding="utf-8")
    store = SqlStore(
        engine, cipher=cipher, cache_bytes=config.recall_cache_mb * 1024 * 1024, cache_idle=config.recall_cache_idle
    )
    if not checked:  # the database did not answer: checked before the store's first transaction
        store.defer_keys_check(partial(keys_fit, engine, cipher))
    records = SqlRecords(store)
    tenants, accounts = records.tenants, records.accounts

    def ai_enabled(place: Place) -> bool:
        return config.ai_enabled and tenants.ai_enabled(place)

    service = MemoryService(
        store,
        embedder=chosen,
        options=Options(
            rules=rules, max_active=config.max_active, trim_above=config.trim_above,
            trusted_tools=config.trusted_tools, prompts=prompts, lease_seconds=float(config.lease_seconds),
            relevance_floor=config.relevance_floor,
            app_uses_retention=timedelta(days=config.app_uses_days) if config.app_uses_days else None,
            summary_retention=timedelta(minutes=config.job_summary_minutes),
            undo_window=timedelta(seconds=config.undo_seconds),
            uses_every=config.uses_every,
            reranker=HttpReranker(config.rerank_url, config.rerank_model, config.rerank_api_key, config.rerank_api,
                                  config.rerank_timeout_ms / 1000) if config.rerank_url else None,
            rerank_candidates=min(config.rerank_candidates, 100),
        ),
        llm=chosen_llm,
        mask=config.mask,
        ai_enabled=ai_enabled,
        names_of=accounts.names_of,
        tenant_learnt_days=tenants.learnt_days,
    )
    queue = HueyQueue(engine)
    queue.bind(service.run_job, service.jobs.stale, service.sweep)
    service.queue = queue
    return Runtime(config, engine, store, records, service, Support(service, records, config.erasure_scope),
                   Administration(records), People(records), queue)
