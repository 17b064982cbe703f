"""A typed Python client for the memory portal's JSON API (`/api/v1`), for assistant backends.

    from portal.client import MemoryClient, Refused

    with MemoryClient("https://memory.example.com", api_key) as memory:
        saved = memory.remember("ada", "Prefers tea to coffee", kind="preference", idempotency_key=turn_id)
        hits = memory.recall("ada", "what does she drink")
        try:
            memory.update("ada", saved.memory.id, text="Prefers green tea", if_revision=saved.memory.revision)
        except Refused as refusal:
            print(refusal.code)

The person is always the `owner_id` argument; the tenant comes from the API key. Every answer is
a dataclass with aware datetimes; every error is an `ApiError` with the API's stable `code`.
"""

from __future__ import annotations

from portal.client.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    InvalidId,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    Redacted,
    Refused,
    Unauthorized,
)
from portal.client.memory_client import MemoryClient
from portal.client.models import (
    ConsolidationResult,
    Export,
    ForgetPreview,
    ForgotMatching,
    Hit,
    Memory,
    Page,
    Portrait,
    PurgeCounts,
    Revision,
    Saved,
    Source,
)

__all__ = [
    "ApiError", "BadRequest", "Conflict", "ConsolidationResult", "Export", "Forbidden", "ForgetPreview", "ForgotMatching",
    "Hit", "InvalidId", "Memory",
    "MemoryClient", "NotFound", "Page", "PayloadTooLarge", "Portrait", "PurgeCounts", "RateLimited", "Redacted",
    "Refused", "Revision", "Saved", "Source", "Unauthorized",
]
