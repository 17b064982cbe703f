#!/usr/bin/env bash
# Make sure a Chromium is installed for the browser tests (tests/e2e); safe to run again.
# Playwright drives Debian's chromium package (`playwright install` needs a download we avoid).
# Installing needs root (CI runs as root); otherwise sudo is used when it is there.
set -euo pipefail
if command -v chromium >/dev/null || [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null; then
  sudo="sudo"
else
  echo "chromium is missing and installing it needs root: apt-get install chromium" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq && $sudo apt-get install -y -qq chromium
