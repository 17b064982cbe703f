"""mem0's integrations, each pinned in its own environment, against this server (issue 39)."""
