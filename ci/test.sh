#!/usr/bin/env bash
# What CI runs: the README's test command, from a clean clone.
set -euo pipefail
cd "$(dirname "$0")/.."
make test
# The slow failover-matrix rows (the 'chaos' marker) run here too, after the README's test command.
make chaos
