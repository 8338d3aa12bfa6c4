#!/usr/bin/env bash
# What CI runs: the README's test command, from a clean clone.
set -euo pipefail
cd "$(dirname "$0")/.."
# kcat (Debian's package) is one of the stock clients the wire tests drive; they skip it, saying
# so, where it is missing. CI runs as root, so it installs it first.
if ! command -v kcat >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get install -y -q kcat >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q kcat >/dev/null 2>&1; } \
    || echo "note: could not install kcat; its wire test will be skipped" >&2
fi
make test
# The slow failover-matrix rows (the 'chaos' marker) run here too, after the README's test command.
make chaos
