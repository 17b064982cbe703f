"""Who wrote a memory, as the person's list says it (issue 38, item 5): the person in the portal,
an app through its key (the API, the model's tools, MCP, mem0's routes; which app, its recorded
`remembered` use says: `StoreTx.writers`), the person's own import, the operator's import, or the
assistant's inference. Read from the sources a memory was first kept with, so a later correction
by someone else does not rewrite who brought it in.

An import marks what it adds with its own batch (`Source("import", batch)`); the operator's
import (`memory-portal import`) names its batch `operator-…`, the person's own (the portal's
Import page) does not. A file's own sources of kind `import` are never kept
(`portal.services.portability`), so a file cannot pass itself off as the operator's.
"""

from __future__ import annotations

from portal.domain.types import Memory

PORTAL = "portal"  # the person, in the portal
SAID = "said"  # the person, as the host that kept it said (asserted, with no source of its own)
APP = "app"  # an app, through its key
OWN_IMPORT = "own_import"  # the person's import, on the portal's Import page
OPERATOR_IMPORT = "operator_import"  # the operator's import, from the command line
ASSISTANT = "assistant"  # the assistant's inference, from a conversation
WRITERS = (PORTAL, SAID, APP, OWN_IMPORT, OPERATOR_IMPORT, ASSISTANT)

OPERATOR_BATCH = "operator-"  # how the operator's import names its batch


def needs_writer(memory: Memory) -> bool:
    """Whether who wrote `memory` depends on which app remembered it (`StoreTx.writers`)."""
    return not memory.sources or memory.sources[0].kind in ("api", "tool")


def written_by(memory: Memory, app_wrote: bool = False) -> str:
    """Who wrote `memory` (one of WRITERS), from the first source it was kept with; `app_wrote`:
    an app's `remembered` use of it is recorded (a write with no source of its own is then the app's)."""
    first = memory.sources[0] if memory.sources else None
    if first is None:
        return APP if app_wrote else ASSISTANT if memory.origin == "inferred" else SAID
    if first.kind == "portal":
        return PORTAL
    if first.kind in ("api", "tool"):
        return APP
    if first.kind == "import":
        return OPERATOR_IMPORT if (first.ref or "").startswith(OPERATOR_BATCH) else OWN_IMPORT
    return ASSISTANT  # consolidation: learnt from a conversation


__all__ = ["APP", "ASSISTANT", "OPERATOR_BATCH", "OPERATOR_IMPORT", "OWN_IMPORT", "PORTAL", "SAID", "WRITERS",
           "needs_writer", "written_by"]
