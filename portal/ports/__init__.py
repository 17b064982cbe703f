"""The ports the services are handed: `Store` (a person's memories, one transaction per operation;
`portal.ports.store`) and `Records` with its `UnitOfWork` (accounts, tenants, API keys, the audit
log, erasure requests, changed together with memories; `portal.ports.records`)."""

from portal.ports.records import Accounts, ApiKeys, AuditLog, Erasures, Records, Repositories, Tenants, UnitOfWork
from portal.ports.store import Cursor, Filters, NeedsVector, Settings, Store, StoreTx, as_vector

__all__ = [
    "Accounts", "ApiKeys", "AuditLog", "Cursor", "Erasures", "Filters", "NeedsVector", "Records", "Repositories",
    "Settings", "Store", "StoreTx", "Tenants", "UnitOfWork", "as_vector",
]
