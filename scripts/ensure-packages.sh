#!/usr/bin/env bash
# Make sure the Debian packages the tests drive are installed; safe to run again.
# Usage: scripts/ensure-packages.sh PACKAGE:PROGRAM ...   e.g. chromium:/usr/bin/chromium
#   chromium      Playwright drives Debian's Chromium (`playwright install` needs a download we avoid)
#   redis-server  the shared rate-limit store is tested against a real Redis (tests start their own)
# Installing needs root (CI runs as root); otherwise sudo is used when it is there.
set -euo pipefail
missing=()
for pair in "$@"; do
  package="${pair%%:*}"
  program="${pair#*:}"
  if [ ! -x "$program" ] && ! command -v "$(basename "$program")" >/dev/null; then
    missing+=("$package")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null; then
  sudo="sudo"
else
  echo "missing ${missing[*]}, and installing needs root: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d 101: the package's own service is not started (the tests start what they need).
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo apt-get update -qq && $sudo apt-get install -y -qq "${missing[@]}"
