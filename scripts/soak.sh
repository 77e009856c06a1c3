#!/usr/bin/env bash
# The fault-injection soak: the harness of test/faults/chaos.test.ts (real worker processes,
# SIGKILL / SIGSTOP / pg_terminate_backend, model and gateway faults, invariants checked in
# PostgreSQL and in the tool server's log) run for SOAK_MINUTES, new sessions starting all along.
#
#   ./scripts/soak.sh                     # 30 minutes
#   SOAK_MINUTES=120 ./scripts/soak.sh    # longer
#   FAULT_SEED=123 ./scripts/soak.sh      # replay a run's random choices (the seed is in its summary)
#
# Other knobs: FAULT_SESSIONS (minimum sessions, default 50), FAULT_CONCURRENCY (sessions in flight,
# default 30 here), FAULT_WORKERS (worker processes, default 3), FAULT_PROGRESS (turns answered
# between two process faults, default 3), FAULTS_COMPACTION=0|1 (force small context windows off
# or on), FAULT_RECONCILE_MS=0 (workers' reconciler off: orphaned sessions are violations;
# default 1000, its period),
# FAULT_DEBUG=1 (log every fault). Worker logs, and a JSON dump of every session that broke an
# invariant, are kept in the folder the summary names.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/toolchain.sh
infra/services.sh
export SOAK_MINUTES="${SOAK_MINUTES:-30}"
export FAULT_CONCURRENCY="${FAULT_CONCURRENCY:-30}"
exec pnpm -s vitest run test/faults/chaos.test.ts "$@"
