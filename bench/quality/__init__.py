"""Recall quality benchmarks (LoCoMo retrieval). Run scripts, not tests: see docs/benchmarks.md."""
