"""The services: the one way the shells (portal, API, CLI, model tools) read and change data.

Framework-free: no Flask, no SQLAlchemy; each operation is one unit of work."""
