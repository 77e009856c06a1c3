import { z } from 'zod';

// Environment variables: every process parses its whole environment once, at start, with one zod
// object built from the pieces below (apps/gateway/src/config.ts, apps/worker/src/config.ts), and
// refuses to start on a bad value with a message naming the variable. Units are explicit: a
// `…_MS` variable takes integer milliseconds or a number with a unit (`500ms`, `15s`, `2m`, `1h`),
// so `LOOPLINE_LOCK_TTL_MS=15s` is 15,000 ms and `abc` is an error, never NaN or 15 ms.
//
// Each variable carries its README documentation as zod metadata (`envDoc`), so the README's
// configuration table is rendered from the same schemas (envTable) and a test keeps them equal.
// Pieces are plain zod objects: another feature adds its variables with `schema.extend({...})`.

export interface EnvDoc {
  /** What the variable does (one line for the README table). */
  doc: string;
  /** The default as shown in the README (e.g. `15000`, `off`, `(required)`). */
  shown: string;
}

type Env = Record<string, string | undefined>;

/** '' counts as unset (a variable exported empty behaves as if absent). */
const unsetIfEmpty = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);

function documented<T extends z.ZodType>(schema: T, doc: string, shown: string): T {
  return schema.meta({ doc, shown } satisfies EnvDoc) as T;
}

const INTEGER = /^[+-]?\d+$/;
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/i;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Parses `15000`, `500ms`, `15s`, `2m`, `1h` to integer milliseconds (undefined when invalid). */
export function parseDurationMs(text: string): number | undefined {
  const m = DURATION.exec(text.trim());
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[(m[2] ?? 'ms').toLowerCase()]!;
  return Number.isSafeInteger(ms) ? ms : undefined;
}

interface Bounds {
  min?: number;
  max?: number;
}

function bounded(value: number, bounds: Bounds, ctx: z.RefinementCtx, unit = ''): number {
  const { min = 0, max = Number.MAX_SAFE_INTEGER } = bounds;
  if (value < min || value > max)
    ctx.addIssue({
      code: 'custom',
      message: `must be between ${min}${unit} and ${max}${unit} (got ${value}${unit})`,
    });
  return value;
}

/** An integer count (no unit); undefined when unset and without a default. */
export function envInt(def: number, doc: string, bounds?: Bounds, shown?: string): z.ZodType<number>;
export function envInt(
  def: undefined,
  doc: string,
  bounds?: Bounds,
  shown?: string,
): z.ZodType<number | undefined>;
export function envInt(
  def: number | undefined,
  doc: string,
  bounds: Bounds = {},
  shown?: string,
): z.ZodType<number | undefined> {
  const schema = z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .optional()
      .transform((text, ctx) => {
        if (text === undefined) return def;
        if (!INTEGER.test(text.trim())) {
          ctx.addIssue({ code: 'custom', message: `must be an integer (got "${text}")` });
          return z.NEVER;
        }
        return bounded(Number(text.trim()), bounds, ctx);
      }),
  );
  return documented(schema, doc, shown ?? (def === undefined ? 'unset' : String(def)));
}

/** A duration in integer milliseconds; accepts `500ms`, `15s`, `2m`, `1h` and converts. */
export function envMs(def: number, doc: string, bounds: Bounds = {}, shown?: string) {
  const schema = z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .optional()
      .transform((text, ctx) => {
        if (text === undefined) return def;
        const ms = parseDurationMs(text);
        if (ms === undefined) {
          ctx.addIssue({
            code: 'custom',
            message: `must be milliseconds or a duration such as 500ms, 15s, 2m (got "${text}")`,
          });
          return z.NEVER;
        }
        return bounded(ms, bounds, ctx, ' ms');
      }),
  );
  return documented(schema, doc, shown ?? String(def));
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

/** A switch: 1/true/yes/on or 0/false/no/off. */
export function envFlag(doc: string, def = false) {
  const schema = z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .optional()
      .transform((text, ctx) => {
        if (text === undefined) return def;
        const v = text.trim().toLowerCase();
        if (TRUE.has(v)) return true;
        if (FALSE.has(v)) return false;
        ctx.addIssue({ code: 'custom', message: `must be 1/true/yes/on or 0/false/no/off (got "${text}")` });
        return z.NEVER;
      }),
  );
  return documented(schema, doc, def ? 'on' : 'off');
}

/** A string; with a default, or optional (undefined when unset). */
export function envString(def: string, doc: string, shown?: string): z.ZodType<string>;
export function envString(def: undefined, doc: string, shown?: string): z.ZodType<string | undefined>;
export function envString(
  def: string | undefined,
  doc: string,
  shown?: string,
): z.ZodType<string | undefined> {
  const inner = def === undefined ? z.string().optional() : z.string().default(def);
  return documented(
    z.preprocess(unsetIfEmpty, inner),
    doc,
    shown ?? (def === undefined ? 'unset' : `\`${def}\``),
  ) as z.ZodType<string | undefined>;
}

/**
 * A required secret of at least `minLength` characters: a short one falls to guessing even
 * through the throttles (a process refuses to start with it, naming the variable).
 */
export function envSecret(doc: string, minLength: number) {
  return documented(
    z.preprocess(
      unsetIfEmpty,
      z.string({ error: 'is required' }).min(minLength, {
        error: `must be at least ${minLength} characters (e.g. \`openssl rand -hex 32\`)`,
      }),
    ),
    doc,
    '(required)',
  );
}

/** A URL with one of the given schemes; with a default or optional. */
export function envUrl(def: string, schemes: readonly string[], doc: string): z.ZodType<string>;
export function envUrl(
  def: undefined,
  schemes: readonly string[],
  doc: string,
): z.ZodType<string | undefined>;
export function envUrl(
  def: string | undefined,
  schemes: readonly string[],
  doc: string,
): z.ZodType<string | undefined> {
  const inner = z.string().refine(
    (text) => {
      try {
        return schemes.includes(new URL(text).protocol.replace(/:$/, ''));
      } catch {
        return false;
      }
    },
    `must be a ${schemes.join(' or ')} URL`,
  );
  return documented(
    z.preprocess(unsetIfEmpty, def === undefined ? inner.optional() : inner.default(def)),
    doc,
    def === undefined ? 'unset' : `\`${def}\``,
  ) as z.ZodType<string | undefined>;
}

/** A comma-separated list (entries trimmed, empty ones dropped). */
export function envList(doc: string, shown = 'empty') {
  return documented(
    z.preprocess(
      unsetIfEmpty,
      z
        .string()
        .optional()
        .transform((text) =>
          (text ?? '')
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s.length > 0),
        ),
    ),
    doc,
    shown,
  );
}

/** One of a few words. */
export function envEnum<const T extends readonly [string, ...string[]]>(
  values: T,
  def: T[number],
  doc: string,
) {
  return documented(z.preprocess(unsetIfEmpty, z.enum(values).default(def)), doc, `\`${def}\``);
}

// ---------------------------------------------------------------------------------------------
// Pieces shared by several processes.

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/loopline';

export const databaseEnv = z.object({
  DATABASE_URL: envUrl(
    DEFAULT_DATABASE_URL,
    ['postgres', 'postgresql'],
    'PostgreSQL (created and migrated on start)',
  ),
  DB_POOL_MAX: envInt(20, 'PostgreSQL connections of this process', { min: 1, max: 1_000 }),
  DB_PREPARED_STATEMENTS: envInt(
    100,
    'statements a PostgreSQL connection repeats that it keeps prepared (parsed once); 0 = off, for a transaction-pooling proxy that does not track prepared statements (PgBouncer before 1.21)',
    { min: 0, max: 10_000 },
  ),
});

export const redisEnv = z.object({
  REDIS_URL: envUrl('redis://127.0.0.1:6379', ['redis', 'rediss'], 'Redis (queues, locks, event streams)'),
  REDIS_CLUSTER_NODES: envList(
    'Redis Cluster seed nodes `host:port,host:port` (or `redis[s]://user:pass@host:port` entries); when set, `REDIS_URL` is unused (docs/DEPLOYMENT.md)',
    'unset',
  ),
  LOOPLINE_NAMESPACE: envString('loopline', 'key and queue prefix (`{loopline}` hash tag)'),
});

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const logEnv = z.object({
  LOG_LEVEL: envEnum(LOG_LEVELS, 'info', 'pino log level'),
});

/** Context-management switches, read by the workers and reported by the gateway. */
export const runtimeFlagsEnv = z.object({
  LOOPLINE_DISABLE_AUTOCOMPACT: envFlag('switch automatic compaction off everywhere'),
  LOOPLINE_DISABLE_PRUNE: envFlag('switch automatic pruning off everywhere'),
});

/**
 * Outbound requests and credentials (docs/security.md), read alike by gateways (they check what a
 * tenant stores) and workers (they connect): the operator's model providers, the key sealing tenant
 * secrets, the private hosts opened per purpose, the attachment size cap.
 */
export const egressEnv = z.object({
  OPENAI_BASE_URL: envUrl(
    undefined,
    ['http', 'https'],
    'base URL of the built-in providers: `openai/` (default api.openai.com) and, when set, `compatible/` (chat completions there)',
  ),
  LOOPLINE_PROVIDERS: envString(
    undefined,
    'more model providers, JSON name → `{baseURL, api?, apiKeyEnv?, apiKey?, headers?, tenants?}` (docs/security.md)',
  ),
  LOOPLINE_SECRETS_KEY: documented(
    z.preprocess(
      unsetIfEmpty,
      z
        .string()
        .refine(
          (v) => /^[0-9a-fA-F]{64}$/.test(v) || /^[A-Za-z0-9+/]{43}=$/.test(v),
          'must be 32 bytes: 64 hex characters or base64',
        )
        .optional(),
    ),
    '32 bytes (64 hex or base64) sealing tenant model keys, webhook signing secrets and webhook tool headers with AES-256-GCM; unset: no tenant model endpoints, unsigned webhook calls, tool headers stored as sent',
    'unset',
  ) as z.ZodType<string | undefined>,
  LOOPLINE_WEBHOOK_ALLOW_PRIVATE: envFlag(
    'let webhook tools reach private and loopback addresses (never cloud metadata)',
  ),
  LOOPLINE_WEBHOOK_ALLOW_HOSTS: envList(
    'hosts webhook tools may reach even when private (comma-separated; host:port opens that port only)',
  ),
  LOOPLINE_ATTACHMENT_ALLOW_PRIVATE: envFlag('let message attachments be fetched from private addresses'),
  LOOPLINE_ATTACHMENT_ALLOW_HOSTS: envList('hosts attachments may be fetched from even when private'),
  LOOPLINE_MODEL_ALLOW_PRIVATE: envFlag("let tenants' own model endpoints (`baseURL`) be private addresses"),
  LOOPLINE_MODEL_ALLOW_HOSTS: envList("hosts tenants' own model endpoints may be on even when private"),
  LOOPLINE_ATTACHMENT_MAX_BYTES: envInt(
    10 * 1024 * 1024,
    'largest attachment (data: URLs at the gateway, downloads in the worker)',
    {
      min: 1,
      max: 1024 * 1024 * 1024,
    },
  ),
});

// ---------------------------------------------------------------------------------------------

export class ConfigError extends Error {
  readonly issues: string[];
  constructor(processName: string, issues: string[]) {
    super(`${processName}: invalid configuration\n${issues.map((i) => `  ${i}`).join('\n')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/** Parses the environment with `schema`; a ConfigError lists every bad variable. */
export function parseEnv<S extends z.ZodObject>(schema: S, env: Env, processName: string): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => {
    const name = String(issue.path[0] ?? '(environment)');
    const message =
      issue.message.startsWith('Invalid input') && env[name] === undefined ? 'is required' : issue.message;
    return `${name} ${message}`;
  });
  throw new ConfigError(processName, issues);
}

// ---------------------------------------------------------------------------------------------
// The README table.

export interface EnvTableRow {
  name: string;
  shown: string;
  processes: string[];
  doc: string;
}

/** Rows of every variable of the given process schemas (same name in several processes: one row). */
export function envRows(schemas: Record<string, z.ZodObject>): EnvTableRow[] {
  const rows = new Map<string, EnvTableRow>();
  for (const [processName, schema] of Object.entries(schemas)) {
    for (const [name, field] of Object.entries(schema.shape)) {
      const meta = (field as z.ZodType).meta() as Partial<EnvDoc> | undefined;
      if (!meta?.doc) throw new Error(`${name}: no envDoc metadata (build it with the env helpers)`);
      const row = rows.get(name);
      if (row) row.processes.push(processName);
      else rows.set(name, { name, shown: meta.shown ?? '', processes: [processName], doc: meta.doc });
    }
  }
  return [...rows.values()];
}

/** The README's configuration table (markdown), in schema order. */
export function envTable(schemas: Record<string, z.ZodObject>): string {
  const lines = ['| Variable | Default | Used by | Meaning |', '| --- | --- | --- | --- |'];
  for (const row of envRows(schemas)) {
    lines.push(
      `| \`${row.name}\` | ${row.shown} | ${row.processes.join(', ')} | ${row.doc.replaceAll('|', '\\|')} |`,
    );
  }
  return lines.join('\n');
}
