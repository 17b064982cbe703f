"""The domain: what a memory is, its rules and text handling, ranking, people and the audit trail.

Plain Python: no web framework, no database."""
