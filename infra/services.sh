#!/usr/bin/env bash
# Makes sure Redis and PostgreSQL answer on REDIS_URL / DATABASE_URL.
# When nothing answers, installs the Debian packages if needed and starts a
# private instance with its data under .local/ (never a system service).
#
#   infra/services.sh [start]   # the default: start what does not answer
#   infra/services.sh status    # what answers, and whether it is a private instance of this checkout
#   infra/services.sh stop      # stop the private instances this script started (never anything else)
# LOOPLINE_STATE_DIR moves the private data folder (default .local/ of the checkout); the script
# tests use it to start and stop instances of their own on private ports.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state="${LOOPLINE_STATE_DIR:-$root/.local}"
command="${1:-start}"
case "$command" in start | stop | status) ;; *)
  echo "usage: $0 [start|stop|status]" >&2; exit 2 ;;
esac
mkdir -p "$state"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/loopline}"

hostport() { # url -> "host port"
  local rest="${1#*://}"; rest="${rest#*@}"; rest="${rest%%/*}"
  local host="${rest%%:*}" port="${rest##*:}"
  [ "$port" = "$rest" ] && port="$2"
  echo "$host $port"
}
answers() { timeout 1 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

# The private PostgreSQL's data folder: under .local/, or (as root, when the postgres user cannot
# enter the checkout) a per-checkout folder under /var/tmp.
pg_data_fallback="/var/tmp/loopline-$(echo -n "${LOOPLINE_STATE_DIR:-$root}" | sha256sum | cut -c1-12)/postgres"
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
# A private Redis is one whose working folder is ours (it says so itself: CONFIG GET dir).
private_redis() { # host port
  command -v redis-cli >/dev/null 2>&1 &&
    [ "$(redis-cli -h "$1" -p "$2" --raw config get dir 2>/dev/null | sed -n 2p)" = "$state/redis" ]
}
private_pg_data() { # port -> prints the data folder of the private PostgreSQL running on that port
  local bin; bin="$(pg_bin)"; [ -n "$bin" ] || return 1
  for d in "$state/postgres" "$pg_data_fallback"; do
    # Line 4 of postmaster.pid is the port: a DATABASE_URL naming another port never stops this one.
    [ -s "$d/postmaster.pid" ] && [ "$(sed -n 4p "$d/postmaster.pid" 2>/dev/null)" = "$1" ] &&
      (cd / && as_postgres "$bin/pg_ctl" -D "$d" status >/dev/null 2>&1) &&
      { echo "$d"; return 0; }
  done
  return 1
}

if [ "$command" != start ]; then
  read -r rhost rport < <(hostport "$REDIS_URL" 6379)
  read -r phost pport < <(hostport "$DATABASE_URL" 5432)
  if [ "$command" = status ]; then
    rc=0
    if private_redis "$rhost" "$rport"; then echo "Redis $rhost:$rport: running (private, data in $state/redis)"
    elif answers "$rhost" "$rport"; then echo "Redis $rhost:$rport: answering (not started by these scripts)"
    else echo "Redis $rhost:$rport: not answering"; rc=3; fi
    if data="$(private_pg_data "$pport")"; then echo "PostgreSQL $phost:$pport: running (private, data in $data)"
    elif answers "$phost" "$pport"; then echo "PostgreSQL $phost:$pport: answering (not started by these scripts)"
    else echo "PostgreSQL $phost:$pport: not answering"; rc=3; fi
    exit "$rc"
  fi
  if private_redis "$rhost" "$rport"; then
    redis-cli -h "$rhost" -p "$rport" shutdown nosave >/dev/null 2>&1 || true
    echo "loopline: stopped the private Redis on $rhost:$rport" >&2
  else echo "loopline: no private Redis on $rhost:$rport (nothing stopped)" >&2; fi
  if data="$(private_pg_data "$pport")"; then
    (cd / && as_postgres "$(pg_bin)/pg_ctl" -D "$data" -m fast -w stop >/dev/null)
    echo "loopline: stopped the private PostgreSQL (data in $data)" >&2
  else echo "loopline: no private PostgreSQL of this checkout on $phost:$pport (nothing stopped)" >&2; fi
  exit 0
fi

apt_ready=0
need_pkg() { # command package
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$apt_ready" = 0 ]; then apt-get update -qq >&2; apt_ready=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2
}

read -r rhost rport < <(hostport "$REDIS_URL" 6379)
if ! answers "$rhost" "$rport"; then
  need_pkg redis-server redis-server
  echo "loopline: starting Redis on $rhost:$rport (data in $state/redis)" >&2
  mkdir -p "$state/redis"
  redis-server --daemonize yes --bind "$rhost" --port "$rport" --save "" --appendonly no \
    --dir "$state/redis" --logfile "$state/redis/redis.log"
  for _ in $(seq 50); do answers "$rhost" "$rport" && break; sleep 0.1; done
fi

# Tests also start private redis-server processes (a Redis they restart, a local Redis Cluster
# made with redis-cli --cluster create): the binaries must exist even when a Redis already answers.
need_pkg redis-server redis-server
need_pkg redis-cli redis-tools

read -r phost pport < <(hostport "$DATABASE_URL" 5432)
if ! answers "$phost" "$pport"; then
  need_pkg psql postgresql
  bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
  data="$state/postgres"
  # PostgreSQL refuses to run as root, so as root it runs as the postgres user, which must be able
  # to reach the data folder. When the checkout sits below a folder it cannot enter (a private
  # temporary folder, say), the data goes to a per-checkout folder under /var/tmp instead.
  if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$state"; then
    data="$pg_data_fallback"
    mkdir -p "$data"
    echo "loopline: $state is not reachable by the postgres user; PostgreSQL data goes to $data" >&2
  fi
  if [ ! -s "$data/PG_VERSION" ]; then
    echo "loopline: initialising PostgreSQL in $data" >&2
    mkdir -p "$data"
    if [ "$(id -u)" = 0 ]; then chown -R postgres "$data"; run=(runuser -u postgres --); else run=(); fi
    (cd / && "${run[@]}" "$bin/initdb" -D "$data" -U postgres --auth=trust >/dev/null)
  fi
  if [ "$(id -u)" = 0 ]; then run=(runuser -u postgres --); chown -R postgres "$data"; else run=(); fi
  echo "loopline: starting PostgreSQL on $phost:$pport" >&2
  (cd / && "${run[@]}" "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w \
    -o "-h $phost -p $pport -k /tmp -c max_connections=300" start >/dev/null)
fi
echo "loopline: Redis and PostgreSQL are reachable" >&2
