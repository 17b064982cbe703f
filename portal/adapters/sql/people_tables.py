"""The records around the memories as tables: API keys, the accounts of people and staff, the
content-free audit log and erasure requests (`portal.adapters.sql.tables` names them too)."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, String, Table, Text

from portal.adapters.sql.columns import UTCDateTime, id_column, metadata

# API keys for the JSON API: only a hash of the secret part is kept (the secret is random and long,
# so a fast hash suffices); the plaintext is shown once, when the key is made.
api_keys = Table(
    "api_keys",
    metadata,
    id_column(primary_key=True),
    Column(
        "tenant_id",
        String(64),
        ForeignKey("tenants.id", ondelete="CASCADE", name="fk_api_keys_tenant_id_tenants"),
        nullable=False,
    ),
    Column("name", String(200), nullable=True),
    Column("prefix", String(16), nullable=False),
    Column("secret_hash", String(64), nullable=False),
    Column("permissions", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("last_used_at", UTCDateTime, nullable=True),
    Column("revoked_at", UTCDateTime, nullable=True),
    Index("ix_api_keys_tenant_id", "tenant_id"),
)

# People and staff who sign in to the portal. `owner_id` is the id under which the assistant
# backend keeps this person's memories (by default the account's own id).
users = Table(
    "users",
    metadata,
    id_column(primary_key=True),
    Column("email", String(320), nullable=False, unique=True),
    Column("name", String(200), nullable=False),
    Column("password_hash", String(200), nullable=False),
    Column("role", String(16), nullable=False),
    Column(
        "tenant_id",
        String(64),
        ForeignKey("tenants.id", ondelete="CASCADE", name="fk_users_tenant_id_tenants"),
        nullable=False,
    ),
    Column("owner_id", String(200), nullable=False),
    Column("language", String(8), nullable=True),  # None: the person chose none (their browser's)
    Column("created_at", UTCDateTime, nullable=False),
    Column("last_visit_at", UTCDateTime, nullable=True),
    # Raised to end every session of the account (sign-out, password change, an admin's say).
    Column("session_epoch", Integer, nullable=False, server_default="0"),
    Index("ix_users_tenant_id", "tenant_id"),
    Index("ix_users_owner_id", "owner_id"),
)

# Content-free record of what staff, admins and people did: who, what, about whom, where, when,
# how many — never a memory's words.
audit_log = Table(
    "audit_log",
    metadata,
    id_column(primary_key=True),
    Column("at", UTCDateTime, nullable=False),
    Column("actor_id", String(64), nullable=True),
    Column("actor_role", String(16), nullable=False),
    Column("action", String(64), nullable=False),
    Column("subject_owner_id", String(200), nullable=True),
    Column("scope", String(200), nullable=True),
    Column("counts", Text, nullable=True),
    Column("ticket", String(200), nullable=True),
    Column("reason_code", String(64), nullable=True),
    Index("ix_audit_log_at", "at"),
    Index("ix_audit_log_scope_at", "scope", "at"),
    Index("ix_audit_log_subject", "subject_owner_id"),
)

# Requests to erase a person (GDPR art. 17), from the person or logged by staff.
erasure_requests = Table(
    "erasure_requests",
    metadata,
    id_column(primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("subject_owner_id", String(200), nullable=False),
    Column("subject_user_id", String(64), nullable=True),
    Column("ticket", String(200), nullable=True),
    Column("received_at", UTCDateTime, nullable=False),
    Column("requested_by", String(16), nullable=False),
    Column("state", String(16), nullable=False),
    Column("completed_at", UTCDateTime, nullable=True),
    Column("completed_by", String(64), nullable=True),
    Column("counts", Text, nullable=True),
    Index("ix_erasure_requests_tenant_state", "tenant_id", "state"),
)
