"""The memory service layer: pure Python, no web framework.

Public surface: `MemoryService`, the domain types, the `Store` protocol and the in-memory
reference store, the rules (`pattern_rule`, `load_rules`, `Kinds`) and the store contract suite
(`portal.memory.contract`).
"""

from .memstore import InMemoryStore
from .ports import Embedder, Options
from .rules import Kinds, load_rules, pattern_rule
from .service import MemoryService, Undone
from .store import Filters, Store, StoreTx
from .types import (
    Conflict,
    Embedding,
    Hit,
    InvalidArgument,
    InvalidWhere,
    Memory,
    MemoryServiceError,
    NotFound,
    Page,
    Place,
    Portrait,
    PurgeCounts,
    Refused,
    Revision,
    Saved,
    Source,
)

__all__ = [
    "Conflict", "Embedder", "Embedding", "Filters", "Hit", "InMemoryStore", "InvalidArgument", "InvalidWhere",
    "Kinds", "Memory", "MemoryService", "MemoryServiceError", "NotFound", "Options", "Page", "Place",
    "Portrait", "PurgeCounts", "Refused", "Revision", "Saved", "Source", "Store", "StoreTx", "Undone",
    "load_rules", "pattern_rule",
]
