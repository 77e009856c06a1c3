#!/usr/bin/env bash
# The test command: bootstraps Node 24 + pnpm, starts Redis/PostgreSQL if they are not
# reachable, installs dependencies, then typechecks, lints, checks the import rules and runs every test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# A full run (no file or folder named) enforces the coverage gates; a subset cannot meet a global
# threshold, so `./scripts/test.sh test/e2e` runs its files without coverage. Options alone
# (`--bail=1`, `--reporter=verbose`) keep it a full run; give an option's value with `=`.
subset=0
for arg in "$@"; do case "$arg" in -*) ;; *) subset=1 ;; esac; done
# LOOPLINE_TEST_DRY_RUN=1 prints the test command it would run and stops (test/ops checks it).
if [ "${LOOPLINE_TEST_DRY_RUN:-}" = 1 ]; then
  if [ "$subset" = 1 ]; then echo "vitest run $*"; else echo "vitest run --coverage $*"; fi
  exit 0
fi
. scripts/toolchain.sh
infra/services.sh
# The session inspector test renders its page in headless Chromium (the Debian package). Best
# effort: without apt-get (or root) the test is skipped, never the run failed.
if [ ! -x /usr/bin/chromium ] && [ "${LOOPLINE_NO_CHROMIUM:-}" != 1 ] && command -v apt-get >/dev/null 2>&1; then
  echo "loopline: installing chromium for the inspector test (apt-get)" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 ||
    echo "loopline: could not install chromium; the headless inspector test will be skipped" >&2
fi
pnpm install --frozen-lockfile --reporter=silent
echo "== typecheck"; pnpm -s typecheck
echo "== lint"; pnpm -s lint
# Import rules (.dependency-cruiser.mjs): no cycles, type-only ones included; core imports nothing
# of ours; apps never import each other; packages never import apps.
echo "== dependency rules"; pnpm -s deps
if [ "$subset" = 1 ]; then
  echo "== tests (a subset: no coverage gates)"; pnpm -s vitest run "$@"
else
  echo "== tests (with v8 coverage: ≥ 80 % of lines overall, ≥ 95 % in packages/core)"; pnpm -s vitest run --coverage "$@"
fi
