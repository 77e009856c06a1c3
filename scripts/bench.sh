#!/usr/bin/env bash
# The benchmark command: bootstraps like scripts/test.sh (Node 24 + pnpm, Redis and PostgreSQL,
# dependencies), then runs bench/run.ts, which writes bench/RESULTS.md and prints the table.
# Arguments pass through: --quick (shorter, fewer runs), --only step,gateway,… , --skip profile.
# --trajectories runs the prune-vs-compaction figure on recorded conversations instead
# (bench/trajectories.ts, ~10 min; its own section of bench/RESULTS.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/toolchain.sh
infra/services.sh
pnpm install --frozen-lockfile --reporter=silent
if [[ "${1:-}" == "--trajectories" ]]; then
  shift
  exec node bench/trajectories.ts "$@"
fi
exec node bench/run.ts "$@"
