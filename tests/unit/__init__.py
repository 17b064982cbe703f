"""Unit tests of the service layer against the in-memory store."""
