import type pg from 'pg';

// Named prepared statements for what a connection runs again and again. Kysely sends every
// statement as an unnamed one, so PostgreSQL parses, analyses and plans it on every execution;
// for the step's fenced CTE statements that was about a third of PostgreSQL's CPU per step
// (bench/profile-findings.md, round 6). A text this connection has already run once is sent
// under a name the second time, and PostgreSQL keeps its parse tree (and, when it judges a
// generic plan as good, the plan) for the connection's life.
//
// - Per connection, by exact text: node-postgres remembers which names the connection has
//   parsed; names are per connection (`ll<generation>_<n>`), never shared, so never clash.
// - Bounded: at most `max` prepared statements per connection (their memory is PostgreSQL's);
//   past that, and for texts seen only once, the statement stays unnamed, as before.
// - Schema changes: a prepared statement whose result columns change (a column added to a table
//   it reads with `*`, during a rolling migration) fails with "cached plan must not change result
//   type" before it runs. The connection then forgets all its names (a new generation) and,
//   outside a transaction, runs the statement again unnamed: the caller never sees it. Inside a
//   transaction the error stands (the transaction is aborted; its caller retries it whole).
// - Off with max = 0: a transaction-pooling proxy that does not track prepared statements
//   (PgBouncer before 1.21) needs that (DB_PREPARED_STATEMENTS=0).

/** Prepared statements per connection by default. */
export const DEFAULT_PREPARED_PER_CONNECTION = 100;

/** Texts seen once kept per connection, waiting for a second sighting; cleared when full. */
const SIGHTINGS_KEPT = 64;

/** SQLSTATE feature_not_supported, raised for a prepared statement whose result type changed. */
const RESULT_TYPE_CHANGED = '0A000';

interface ConnectionStatements {
  /** Text → name of the statements prepared on this connection (this generation). */
  prepared: Map<string, string>;
  /** Texts seen once. */
  seen: Set<string>;
  generation: number;
  inTransaction: boolean;
}

type Query = (...args: unknown[]) => unknown;

/** Makes a pooled client send repeated statements as named prepared statements (file header). */
export function prepareRepeatedStatements(client: pg.ClientBase, max: number): void {
  if (max <= 0) return;
  const state: ConnectionStatements = {
    prepared: new Map(),
    seen: new Set(),
    generation: 0,
    inTransaction: false,
  };
  // The prototype's query, looked up at each call: a later wrapper of pg.Client.prototype.query
  // (statement counters in the bench) still sees every statement.
  const base = (...args: unknown[]) =>
    (Object.getPrototypeOf(client) as { query: Query }).query.apply(client, args);
  const query = (config: unknown, values?: unknown, callback?: unknown) => {
    if (typeof config !== 'string') return base(config, values, callback);
    if (!Array.isArray(values) || values.length === 0 || callback !== undefined) {
      trackTransaction(state, config);
      return base(config, values, callback);
    }
    const name = nameFor(state, config, max);
    if (name === undefined) return base(config, values);
    return (base({ name, text: config, values }) as Promise<unknown>).catch((err: unknown) => {
      if (!resultTypeChanged(err)) throw err;
      forgetAll(state);
      if (state.inTransaction) throw err;
      return base(config, values);
    });
  };
  (client as unknown as { query: Query }).query = query as Query;
}

/** The name to send `text` under, or undefined to send it unnamed. */
function nameFor(state: ConnectionStatements, text: string, max: number): string | undefined {
  const known = state.prepared.get(text);
  if (known !== undefined) return known;
  if (state.prepared.size >= max) return undefined;
  if (!state.seen.has(text)) {
    if (state.seen.size >= SIGHTINGS_KEPT) state.seen.clear();
    state.seen.add(text);
    return undefined;
  }
  state.seen.delete(text);
  const name = `ll${state.generation}_${state.prepared.size}`;
  state.prepared.set(text, name);
  return name;
}

/** After a schema change: every statement is prepared anew, under names not used before. */
function forgetAll(state: ConnectionStatements): void {
  state.generation++;
  state.prepared.clear();
  state.seen.clear();
}

/** Kysely opens and ends transactions with these texts (no parameters). */
function trackTransaction(state: ConnectionStatements, text: string): void {
  const head = text.trimStart().slice(0, 20).toLowerCase();
  if (head.startsWith('begin') || head.startsWith('start transaction')) state.inTransaction = true;
  else if (
    head === 'commit' ||
    head === 'end' ||
    head === 'rollback' ||
    head.startsWith('commit ') ||
    (head.startsWith('rollback ') && !head.startsWith('rollback to'))
  )
    state.inTransaction = false;
}

function resultTypeChanged(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return (
    e?.code === RESULT_TYPE_CHANGED &&
    typeof e.message === 'string' &&
    e.message.includes('cached plan must not change result type')
  );
}
