import { createRequire } from 'node:module';
import { Redis } from 'ioredis';

// The same node-postgres module @loopline/db uses (one copy in the store); required, not imported,
// because the bench has no pg type package of its own.
interface PgClient {
  connectionParameters?: { application_name?: string };
}
const pg = createRequire(import.meta.url)('pg') as {
  Client: { prototype: PgClient & { query: (...args: unknown[]) => unknown } };
};

// Counts the PostgreSQL statements and Redis commands of one named client (the worker's
// `application_name` / ioredis `connectionName`), by shape, without changing what is sent.

export interface Counts {
  queries: number;
  commands: number;
  /** Normalised SQL (literals and $n folded) → count. */
  sql: Map<string, number>;
  /** Redis command name (EVALSHA resolved to the script's first key pattern when possible) → count. */
  redis: Map<string, number>;
}

const state: { name?: string; counts: Counts } = {
  counts: { queries: 0, commands: 0, sql: new Map(), redis: new Map() },
};

const shapes = new Map<string, string>();

function shape(text: string): string {
  let s = shapes.get(text);
  if (s === undefined) {
    s = normalise(text);
    if (shapes.size < 10_000) shapes.set(text, s);
  }
  return s;
}

function normalise(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/\$\d+/g, '?')
    .replace(/'[^']*'/g, '?')
    .replace(/\b\d+\b/g, '?')
    .trim()
    .slice(0, 160);
}

const names = new Map<string, string>();

/** The name a script was defined under (ioredis defineCommand: BullMQ's scripts, Loopline's lock). */
function scriptName(client: Redis, sha: string): string {
  let name = names.get(sha);
  if (name === undefined) {
    const set = (client as unknown as { scriptsSet?: Record<string, { sha: string }> }).scriptsSet ?? {};
    name = Object.entries(set).find(([, s]) => s.sha === sha)?.[0] ?? sha.slice(0, 8);
    names.set(sha, name);
  }
  return name;
}

let installed = false;

/** Patches pg.Client and Redis once; counts only traffic of clients named `name`. */
export function installCounters(name: string): void {
  state.name = name;
  if (installed) return;
  installed = true;
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: PgClient, ...args: unknown[]) {
    if (this.connectionParameters?.application_name === state.name) {
      const first = args[0];
      const text = typeof first === 'string' ? first : ((first as { text?: string })?.text ?? '?');
      state.counts.queries++;
      const key = shape(text);
      state.counts.sql.set(key, (state.counts.sql.get(key) ?? 0) + 1);
    }
    return query.apply(this, args);
  };

  const send = Redis.prototype.sendCommand as (...args: unknown[]) => unknown;
  Redis.prototype.sendCommand = function (this: Redis, ...args: unknown[]) {
    if (this.options.connectionName === state.name) {
      const command = args[0] as { name?: string; args?: unknown[] };
      state.counts.commands++;
      let key = String(command.name ?? '?').toUpperCase();
      if (key === 'EVALSHA' && command.args) key = `EVALSHA ${scriptName(this, String(command.args[0]))}`;
      state.counts.redis.set(key, (state.counts.redis.get(key) ?? 0) + 1);
    }
    return send.apply(this, args);
  } as typeof Redis.prototype.sendCommand;
}

/** Zeroes the query and command counters. */
export function resetCounts(): void {
  state.counts = { queries: 0, commands: 0, sql: new Map(), redis: new Map() };
}

/** The counters since the last reset. */
export function counts(): Counts {
  return state.counts;
}

/** The `n` most frequent entries of a count map, per step. */
export function topShapes(map: Map<string, number>, steps: number, n = 12): Array<[string, number]> {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => [k, v / steps]);
}
