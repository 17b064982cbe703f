#!/usr/bin/env bash
# The pinned environments of mem0's integrations that tests/integrations drives against this server:
# one Python environment per lock file in tests/integrations/envs (every package pinned, with its
# hashes), made by uv under .integrations/ (ignored by git), and the JavaScript ones from
# tests/integrations/npm/package-lock.json. Safe to run again: an environment whose stamp holds its
# lock's checksum is left as it is, so a second run installs nothing. Needs .venv (scripts/bootstrap.sh
# with the test extra, which brings uv) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
uv=.venv/bin/uv
base="$(.venv/bin/python -c 'import sys; print(sys._base_executable)')"
checksum() { sha256sum "$1" | cut -d' ' -f1; }
for lock in tests/integrations/envs/*.lock; do
  name="$(basename "$lock" .lock)"
  env=".integrations/$name"
  want="$(checksum "$lock")"
  if [ -f "$env/.stamp" ] && [ "$(cat "$env/.stamp")" = "$want" ]; then
    continue
  fi
  rm -rf "$env"
  "$uv" venv --quiet --python "$base" "$env"
  "$uv" pip sync --quiet --require-hashes --python "$env/bin/python" "$lock"
  printf '%s\n' "$want" > "$env/.stamp"
done
npm_dir=tests/integrations/npm
want="$(checksum "$npm_dir/package-lock.json")"
if [ ! -f "$npm_dir/node_modules/.stamp" ] || [ "$(cat "$npm_dir/node_modules/.stamp")" != "$want" ]; then
  npm ci --prefix "$npm_dir" --no-audit --no-fund --loglevel=error
  printf '%s\n' "$want" > "$npm_dir/node_modules/.stamp"
fi
