"""The database schema as SQLAlchemy Core tables; Alembic migrations create exactly this.

Vectors are pgvector `vector` on PostgreSQL (no fixed size: rows of several models and sizes may
coexist, and a query only ever compares rows of one model and one size) and float32 blobs on
SQLite. Times are stored in UTC and read back timezone-aware.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)

# The column types and metadata (.columns) and the records' tables (.people_tables) are named
# here too, where migrations, adapters and tests have always found them.
from portal.adapters.sql.columns import UTCDateTime as UTCDateTime
from portal.adapters.sql.columns import VectorType as VectorType
from portal.adapters.sql.columns import id_column
from portal.adapters.sql.columns import metadata as metadata
from portal.adapters.sql.people_tables import api_keys as api_keys
from portal.adapters.sql.people_tables import audit_log as audit_log
from portal.adapters.sql.people_tables import erasure_requests as erasure_requests
from portal.adapters.sql.people_tables import users as users

tenants = Table(
    "tenants",
    metadata,
    id_column(primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("ai_enabled", Boolean, nullable=False, default=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("learnt_days", Integer, nullable=True),  # the default "forget what is learnt after N days"
)

# Every key of a table holding a person's rows starts with owner_id, the column a sharded schema
# spreads them by (docs/operations.md "Scaling past one database"): a memory id is unique within
# its owner. Ids are random and made by the service, and no statement names one without its place.
memories = Table(
    "memories",
    metadata,
    id_column(nullable=False),
    Column("owner_id", String(200), nullable=False),
    Column("scope", String(200), nullable=False),
    Column("revision", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("search_text", Text, nullable=True),
    Column("words_key", String(64), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("importance", Integer, nullable=False),
    Column("role", String(64), nullable=True),
    Column("origin", String(16), nullable=False),
    Column("sources", Text, nullable=False),
    Column("channel", String(16), nullable=False),
    Column("seen", Boolean, nullable=False),
    Column("pinned", Boolean, nullable=False),
    Column("state", String(16), nullable=False),
    Column("last_op", String(16), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("last_used_at", UTCDateTime, nullable=True),
    Column("embedding_model", String(200), nullable=True),
    Column("embedding_dim", Integer, nullable=True),
    Column("embedding", VectorType, nullable=True),
    Column("attributes", Text, nullable=True),  # JSON, encrypted as the text is (portal.domain.attributes)
    Column("expires_at", UTCDateTime, nullable=True),  # forgotten from then on (NULL: never)
    Column("withheld", Text, nullable=True),  # JSON list of app ids, or ["*"]: "don't use this"
    Index("ix_memories_place_state", "owner_id", "scope", "state"),
    Index("ix_memories_place_created", "owner_id", "scope", "created_at", "id"),
    Index("ix_memories_place_words", "owner_id", "scope", "words_key"),
    Index("ix_memories_embedding_model", "embedding_model"),
    # A memory named by its id alone (Store.memory_place). The id only: an index that also held the
    # scope would match a place's lookups as well as the owner-led primary key, and SQLite's planner
    # then took it for them.
    Index("ix_memories_id", "id"),
    Index("ix_memories_expires_at", "expires_at"),  # the sweep of expired memories, across places
    PrimaryKeyConstraint("owner_id", "id"),
)

memory_revisions = Table(
    "memory_revisions",
    metadata,
    Column("memory_id", String(64), nullable=False),
    Column("revision", Integer, nullable=False),
    Column("owner_id", String(200), nullable=False),
    Column("scope", String(200), nullable=False),
    Column("text", Text, nullable=False),
    Column("kind", String(64), nullable=False),
    Column("importance", Integer, nullable=False),
    Column("origin", String(16), nullable=False),
    Column("sources", Text, nullable=False),
    Column("op", String(16), nullable=False),
    Column("written_at", UTCDateTime, nullable=False),
    Column("embedding_model", String(200), nullable=True),
    Column("embedding", VectorType, nullable=True),
    # Set on a wording a person's own edit replaced: erased once past (kept only while Undo is offered).
    Column("expires_at", UTCDateTime, nullable=True),
    Index("ix_memory_revisions_place", "owner_id", "scope"),
    Index("ix_memory_revisions_expires_at", "expires_at"),
    PrimaryKeyConstraint("owner_id", "memory_id", "revision"),
)

memory_settings = Table(
    "memory_settings",
    metadata,
    Column("owner_id", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("paused", Boolean, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("learnt_days", Integer, nullable=True),  # NULL: the tenant's default
)

# The app of a claim kept before a conversation's claim was its app's (migration 0021).
EVERY_APPS_CLAIM = "*"

consolidation_refs = Table(
    "consolidation_refs",
    metadata,
    Column("owner_id", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("ref", String(200), primary_key=True),
    # The app that had the conversation ("" the person's own; EVERY_APPS_CLAIM one kept before
    # claims were an app's: it holds for every app and the person, as it did then).
    Column("app_id", String(64), primary_key=True),
    Column("claimed_at", UTCDateTime, nullable=False),
    # running while a consolidation holds it (until lease_until, renewed as it runs), done once learnt
    Column("state", String(16), nullable=False, server_default="done"),
    Column("lease_until", UTCDateTime, nullable=True),
    Column("holder", String(32), nullable=True),  # a random token of the request that holds it
)

idempotency_receipts = Table(
    "idempotency_receipts",
    metadata,
    Column("owner_id", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("key", String(200), primary_key=True),
    Column("request_hash", String(64), nullable=False),
    Column("status", Integer, nullable=False),
    Column("response", Text, nullable=True),
    Column("memory_ids", Text, nullable=False),
    Column("redacted", Boolean, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    # A pending receipt's hold on its key: renewed while its request runs, taken over once it lapsed.
    Column("lease_until", UTCDateTime, nullable=True),
    Column("holder", String(32), nullable=True),  # a random token of the request that holds it
)

memory_tombstones = Table(
    "memory_tombstones",
    metadata,
    Column("owner_id", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("memory_id", String(64), primary_key=True),
    Column("forgotten_at", UTCDateTime, nullable=False),
)

# One row per place holding memories: a random token replaced by every write that changes what
# recall ranks (which memories are active, their text, kind, time or vector). A process keeps a
# place's ranking data between recalls while the token stays the same (see
# `portal.domain.recall.index`); random rather than counted, so a place erased and written
# again never comes back to a token some process still holds. A migration that rewrites memories
# (their search_text, say) must replace every token.
memory_places = Table(
    "memory_places",
    metadata,
    Column("owner_id", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("token", String(32), nullable=False),
)

# Connected apps (portal.domain.apps), content-free. What the person decided about an app of the
# tenant: paused (it may read, not write) or blocked (neither).
app_controls = Table(
    "app_controls",
    metadata,
    Column("owner_id", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("app_id", String(64), primary_key=True),
    Column("state", String(16), nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

# How often an app touched a memory one way on one UTC day, and when last: ids, counts and times,
# never text. Pruned by last_at (`prune --app-uses`), erased with the person.
app_uses = Table(
    "app_uses",
    metadata,
    Column("owner_id", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("app_id", String(64), primary_key=True),
    Column("memory_id", String(64), primary_key=True),
    Column("action", String(16), primary_key=True),
    Column("day", String(10), primary_key=True),  # YYYY-MM-DD, UTC
    Column("count", Integer, nullable=False),
    Column("last_at", UTCDateTime, nullable=False),
    Index("ix_app_uses_last_at", "last_at"),
)

# Which memories were handed to which conversation of which app (recall, portrait, tools), first
# and last: the conversation is a keyed digest of the assistant's reference, never its words.
# Pruned with the apps' uses, erased with the memory and with the person.
conversation_uses = Table(
    "conversation_uses",
    metadata,
    Column("owner_id", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("app_id", String(64), primary_key=True),
    Column("conversation", String(64), primary_key=True),
    Column("memory_id", String(64), primary_key=True),
    Column("first_at", UTCDateTime, nullable=False),
    Column("last_at", UTCDateTime, nullable=False),
    Index("ix_conversation_uses_last_at", "last_at"),
)

# Consolidation in the background (portal.services.jobs): one row per conversation sent with
# "wait": false. `work` (the transcript and the host's settings, JSON) is encrypted like memory text
# and cleared once the job is over; `result` holds counts and codes only. The id is random (made by
# the service): a worker woken with a job's id finds its place by it (`SqlStore.job_place`), through
# an index that is not unique, since a sharded schema can only enforce keys holding the owner.
consolidation_jobs = Table(
    "consolidation_jobs",
    metadata,
    Column("owner_id", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("id", String(64), primary_key=True),
    Column("ref", String(200), nullable=False),
    Column("state", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("app_id", String(64), nullable=True),
    Column("result", Text, nullable=True),
    Column("reason", String(64), nullable=True),
    Column("work", Text, nullable=True),
    # The model's summary, encrypted like memory text, until the job's app reads it (once) or it expires.
    Column("summary", Text, nullable=True),
    # The ids of the memories the job's run wrote (JSON list): erasing any of their words clears the summary.
    Column("taught", Text, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index("ix_consolidation_jobs_id", "id"),
    Index("ix_consolidation_jobs_state_updated", "state", "updated_at"),
)

# One token of a fixed probe, in the first key's encryption: whether a process's keys read this
# database's text (portal.adapters.sql.keycheck). No person's data.
encryption_check = Table(
    "encryption_check",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("token", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

OWNER_TABLES = (
    memories, memory_revisions, memory_settings, consolidation_refs, idempotency_receipts, memory_tombstones,
    memory_places, app_controls, app_uses, conversation_uses, consolidation_jobs,
)
