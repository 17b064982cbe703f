#!/usr/bin/env bash
# Make .venv with everything the project needs; safe to run again (only what is missing is installed).
# Usage: scripts/bootstrap.sh [extras]   e.g. "local,postgres" or "local,postgres,test"
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-local,postgres}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
. .venv/bin/activate
stamp=".venv/.installed-$(echo "$extras" | tr ',' '-')"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  python -m pip install -q --upgrade pip
  # The CPU build of torch first: a plain `torch` requirement would pull a multi-GB CUDA build.
  python -m pip install -q "torch==2.13.0"
  python -m pip install -q -e ".[${extras}]"
  touch "$stamp"
fi
