#!/usr/bin/env bash
# The run command: bootstraps the toolchain and services, then starts the mock model, the
# gateway and the worker and drives a demo conversation. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/toolchain.sh
infra/services.sh
pnpm install --frozen-lockfile --reporter=silent
exec node apps/cli/src/demo.ts "$@"
