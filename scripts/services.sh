#!/usr/bin/env bash
# The private Redis and PostgreSQL that the entry scripts start when nothing answers:
#   ./scripts/services.sh status | stop | start
# Only instances started by these scripts (data under .local/) are ever stopped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec infra/services.sh "${1:-status}"
